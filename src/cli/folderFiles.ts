/**
 * Reading a model folder the user named on the command line as files only: a file must be a
 * regular file inside the folder (a link may resolve inside it, or into a Hugging Face cache's
 * blobs folder), no larger than the cap its caller sets, all checked before a byte is read; it is
 * opened without blocking, so a named pipe cannot stall the CLI. A checkpoint's files are read here,
 * whole (readRegular) or held open for positioned reads (openRegular: its safetensors, tensor by
 * tensor: hfSeat.ts); an ONNX folder's are checked here as sized paths (regularFile) and read in the
 * budgeted worker thread (onnxSeat.ts).
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

/**
 * The real path of file `name` of folder `root` (a real path, from openFolder), every link on the
 * way resolved (a linked sub-folder too), refused unless it stays inside the folder; `where` names
 * it in messages.
 */
async function insidePath(root: string, name: string, folder: string): Promise<{ readonly real: string; readonly where: string }> {
  const path = join(root, name);
  const where = `--agent-model: "${escapeControl(name)}" in the ${folder}`;
  const link = await lstat(path).catch((e: NodeJS.ErrnoException) => {
    throw new SatError('model', `${where} cannot be read (${e.code ?? e.message})`);
  });
  const real = await realpath(path).catch(() => {
    throw new SatError('model', `${where} is a link to nothing that exists`);
  });
  if (!allowedRoots(root).some((r) => real.startsWith(r + sep))) {
    throw new SatError('model', `${where} is ${link.isSymbolicLink() ? 'a link to a file' : 'reached through a link'} outside the folder; copy the file into the folder instead`);
  }
  return { real, where };
}

/** Refuses what is not a regular file of at most `cap` bytes (`why` says where the cap comes from). */
function checkRegular(st: Stats, where: string, cap: number, why: string): void {
  if (!st.isFile()) throw new SatError('model', `${where} is ${kindOf(st)}, not a file`);
  if (st.size > cap) throw new SatError('model', `${where} is ${formatSize(st.size)}, more than the ${formatSize(cap)} this playground reads for it ${why} (docs/models.md, "Input limits")`);
}

/**
 * Regular file `name` of folder `root` (a real path, from openFolder) as a sized path, checked
 * without reading a byte: inside the folder (insidePath), a regular file, at most `cap` bytes
 * (`folder` names the folder's kind in messages). Its bytes are read by sourceBytes
 * (src/workers/inputJobs.ts) in the budgeted worker thread, to this size at most: an ONNX folder.
 */
export async function regularFile(root: string, name: string, cap: number, why: string, folder = 'checkpoint folder'): Promise<{ readonly path: string; readonly size: number }> {
  const { real, where } = await insidePath(root, name, folder);
  const st = await stat(real).catch((e: NodeJS.ErrnoException) => {
    throw new SatError('model', `${where} cannot be read (${e.code ?? e.message})`);
  });
  checkRegular(st, where, cap, why);
  return { path: real, size: st.size };
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
 * Regular file `name` of folder `root`, held open after the checks regularFile makes, made on the
 * open handle (so a file swapped in after the check is not the one read): a checkpoint's files,
 * read here — its safetensors tensor by tensor. The caller closes it.
 */
export async function openRegular(root: string, name: string, cap: number, why: string, folder = 'checkpoint folder'): Promise<OpenFile> {
  const { real, where } = await insidePath(root, name, folder);
  const handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW).catch((e: NodeJS.ErrnoException) => {
    throw new SatError('model', `${where} cannot be opened (${e.code ?? e.message})`);
  });
  try {
    const st = await handle.stat();
    checkRegular(st, where, cap, why);
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
