/**
 * Reading a model folder the user named on the command line as files only: a file must be a
 * regular file inside the folder (a link may resolve inside it, or into a Hugging Face cache's
 * blobs folder), no larger than the cap its caller sets, all checked before a byte is read. No
 * byte is read here: each file leaves as a checked path (regularFile: its real path, size, device
 * and inode) for the budgeted worker thread, which opens it without blocking or following a link
 * and refuses anything but the file checked (src/workers/inputJobs.ts): a checkpoint's JSON files
 * and headers in the checkpointFolder job, its weights in a range session (src/cli/inputCheck.ts),
 * an ONNX folder's files in the onnxFolder job.
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
import type { CheckedPath } from '../workers/inputJobs';

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
 * Regular file `name` of folder `root` (a real path, from openFolder) as a checked path, without
 * reading a byte: inside the folder (insidePath), a regular file, at most `cap` bytes (`folder`
 * names the folder's kind in messages), with the device and inode it has now. Its bytes are read
 * in the budgeted worker thread (src/workers/inputJobs.ts), which refuses a file or link put in
 * its place after this check, and reads it to this size at most.
 */
export async function regularFile(root: string, name: string, cap: number, why: string, folder = 'checkpoint folder'): Promise<CheckedPath> {
  const { real, where } = await insidePath(root, name, folder);
  const st = await stat(real).catch((e: NodeJS.ErrnoException) => {
    throw new SatError('model', `${where} cannot be read (${e.code ?? e.message})`);
  });
  checkRegular(st, where, cap, why);
  return { path: real, size: st.size, dev: st.dev, ino: st.ino };
}
