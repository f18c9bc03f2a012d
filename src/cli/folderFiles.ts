/**
 * Reading a model folder the user named on the command line as files only: a file must be a
 * regular file inside the folder (a link may resolve inside it, or into a Hugging Face cache's
 * blobs folder), no larger than the cap its caller sets, all checked before a byte is read; it is
 * opened without blocking, so a named pipe cannot stall the CLI. Read whole (readRegular), or held
 * open for positioned reads (openRegular: a checkpoint's safetensors files, read tensor by tensor).
 * Used by the checkpoint seat (hfSeat.ts) and the ONNX seat (onnxSeat.ts).
 *
 * Not here: what a file may hold, or how large (the caps come from src/core/limits.ts and the
 * loaders).
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { SatError } from '../core/errors';
import { formatSize } from '../core/limits';
import { escapeControl } from '../core/text';

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

/** A regular file of a folder, checked and held open: its size when checked and positioned reads of it. */
export interface OpenFile {
  /** The size it had when checked; reads never go past it. */
  readonly byteLength: number;
  /** Bytes [begin, end) (fewer when the file shrank since it was checked). */
  read(begin: number, end: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

/**
 * Regular file `name` of folder `root` (a real path, from openFolder), held open after every check
 * a read needs: inside the folder, a regular file, at most `cap` bytes (`why` says where the cap
 * comes from; `folder` names the folder's kind in messages). The caller closes it.
 */
export async function openRegular(root: string, name: string, cap: number, why: string, folder = 'checkpoint folder'): Promise<OpenFile> {
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
  const handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW).catch((e: NodeJS.ErrnoException) => {
    throw new SatError('model', `${where} cannot be opened (${e.code ?? e.message})`);
  });
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new SatError('model', `${where} is ${kindOf(st)}, not a file`);
    if (st.size > cap) throw new SatError('model', `${where} is ${formatSize(st.size)}, more than the ${formatSize(cap)} this playground reads for it ${why} (docs/models.md, "Input limits")`);
    const size = st.size;
    return {
      byteLength: size,
      read: async (begin, end) => {
        const bytes = new Uint8Array(Math.max(0, Math.min(end, size) - begin));
        let at = 0;
        while (at < bytes.length) {
          const { bytesRead } = await handle.read(bytes, at, bytes.length - at, begin + at);
          if (bytesRead === 0) break;
          at += bytesRead;
        }
        return at === bytes.length ? bytes : bytes.subarray(0, at);
      },
      close: () => handle.close(),
    };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** The bytes of regular file `name` of folder `root`, checked as openRegular checks it; read to the size the file had when checked. */
export async function readRegular(root: string, name: string, cap: number, why: string, folder = 'checkpoint folder'): Promise<Uint8Array> {
  const f = await openRegular(root, name, cap, why, folder);
  try {
    return await f.read(0, f.byteLength);
  } finally {
    await f.close();
  }
}
