/**
 * A file on disk as the CLI hands it to the input worker (src/workers/inputJobs.ts CheckedPath):
 * its path, size, device and inode as they are now.
 */
import { statSync } from 'node:fs';
import type { CheckedPath } from '../../src/workers/inputJobs';

export function checkedPath(path: string): CheckedPath {
  const st = statSync(path);
  return { path, size: st.size, dev: st.dev, ino: st.ino };
}
