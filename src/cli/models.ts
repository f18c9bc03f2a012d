/**
 * Where the command lines find the shipped models: public/models/<name>.safetensors, read from
 * disk (the page fetches the same files, src/app/team.ts). A missing file is a SatError that says
 * which `npm run pretrain` builds it.
 *
 * Not here: parsing the file (src/model/weights.ts) or choosing which model (src/sat/config.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SatError } from '../core/errors';

/** The bytes of shipped model `name` ("arithmetic-S"). */
export async function loadFromDisk(name: string): Promise<Uint8Array> {
  const file = join('public', 'models', `${name}.safetensors`);
  try {
    return new Uint8Array(await readFile(file));
  } catch {
    throw new SatError('model', `Model file ${file} is missing: run \`npm run pretrain -- --task ${name.split('-')[0]} --size ${name.split('-')[1]}\` to build it.`);
  }
}
