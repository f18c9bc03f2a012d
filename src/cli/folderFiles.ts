/**
 * Reading a model folder the user named on the command line as files only: a file must be a
 * regular file inside the folder (a link may resolve inside it, or into a Hugging Face cache's
 * blobs folder), no larger than the cap its caller sets, all checked before a byte is read; it is
 * opened without blocking, so a named pipe cannot stall the CLI. Used by the checkpoint seat
 * (hfSeat.ts, which reads here) and the ONNX seat (onnxSeat.ts, whose files are read in the
 * budgeted worker thread).
 *
 * Not here: what a file may hold, or how large (the caps come from src/core/limits.ts and the
 * loaders).
 */
import type { Stats } from 'node:fs';
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { SatError } from '../core/errors';
import { formatSize } from '../core/limits';
import { escapeControl } from '../core/text';
import { sourceBytes } from '../workers/inputJobs';

/** What a path holds, in words, when it is not a regular file. */
function kindOf(st: Stats): string {
  return st.isDirectory() ? 'a folder' : st.isFIFO() ? 'a named pipe' : st.isSocket() ? 'a socket' : st.isCharacterDevice() || st.isBlockDevice() ? 'a device' : 'not a regular file';
}

/**
 * The folders a file of `root` may resolve into: the folder itself and, when it is a Hugging Face
 * cache snapshot (…/snapshots/<revision>), the cache's blobs folder its links point to.
 */
function allowedRoots(root: string): string[] {
  const up = dirname(root);
  return basename(up) === 'snapshots' ? [root, join(dirname(up), 'blobs')] : [root];
}

/** The real path of folder `dir` and the names in it; a SatError saying `hint` when it is not a readable folder. */
export async function openFolder(dir: string, hint: string): Promise<{ root: string; names: string[] }> {
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
    const root = await realpath(dir);
    return { root, names: await readdir(root) };
  } catch {
    throw new SatError('model', `--agent-model: "${escapeControl(dir)}" is not a folder that can be read; ${hint}`);
  }
}

/**
 * Regular file `name` of folder `root` (a real path, from openFolder) as a sized path, checked
 * without reading a byte: inside the folder (every link on the way resolved), a regular file, at
 * most `cap` bytes (`why` says where the cap comes from; `folder` names the folder's kind in
 * messages). Its bytes are read by sourceBytes (src/workers/inputJobs.ts) — here for a checkpoint
 * (readRegular), in the budgeted worker thread for an ONNX folder — to this size at most.
 */
export async function regularFile(root: string, name: string, cap: number, why: string, folder = 'checkpoint folder'): Promise<{ readonly path: string; readonly size: number }> {
  const path = join(root, name);
  const where = `--agent-model: "${escapeControl(name)}" in the ${folder}`;
  // The real path, every link on the way resolved (a linked sub-folder too), must stay inside the folder.
  const link = await lstat(path).catch((e: NodeJS.ErrnoException) => {
    throw new SatError('model', `${where} cannot be read (${e.code ?? e.message})`);
  });
  const real = await realpath(path).catch(() => {
    throw new SatError('model', `${where} is a link to nothing that exists`);
  });
  if (!allowedRoots(root).some((r) => real.startsWith(r + sep))) {
    throw new SatError('model', `${where} is ${link.isSymbolicLink() ? 'a link to a file' : 'reached through a link'} outside the folder; copy the file into the folder instead`);
  }
  const st = await stat(real).catch((e: NodeJS.ErrnoException) => {
    throw new SatError('model', `${where} cannot be read (${e.code ?? e.message})`);
  });
  if (!st.isFile()) throw new SatError('model', `${where} is ${kindOf(st)}, not a file`);
  if (st.size > cap) throw new SatError('model', `${where} is ${formatSize(st.size)}, more than the ${formatSize(cap)} this playground reads for it ${why} (docs/models.md, "Input limits")`);
  return { path: real, size: st.size };
}

/** The bytes of regular file `name` of folder `root`, checked as regularFile does, read here. */
export async function readRegular(root: string, name: string, cap: number, why: string, folder = 'checkpoint folder'): Promise<Uint8Array> {
  return sourceBytes(await regularFile(root, name, cap, why, folder));
}
