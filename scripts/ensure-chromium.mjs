#!/usr/bin/env node
/**
 * Makes sure Debian's Chromium is at /usr/bin/chromium for the browser tests (tests/e2e), and
 * returns its path. If it is missing and we are root, installs it with
 * `apt-get update && apt-get install -y chromium`, printing what it does; if not root, fails with
 * a message saying the one command to run. Never skips silently.
 *
 * Usable as a module (`await ensureChromium()`: the Vitest global setup tests/setup/global.ts runs it
 * once before any test file, and the e2e test again for its path) or a command
 * (`node scripts/ensure-chromium.mjs`). Plain Node, no dependencies, so it runs before `npm ci`.
 *
 * Not here: downloading browsers from anywhere else — no `playwright install`, no snap, no
 * network beyond the Debian archive that apt-get is already configured for.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const CHROMIUM_PATH = '/usr/bin/chromium';
export const MISSING_MESSAGE = 'Chromium not found at /usr/bin/chromium: run `sudo apt-get install -y chromium` (Debian/Ubuntu)';

/** Runs a command with inherited output; rejects with the command and exit status on failure. */
function run(cmd, args) {
  console.log(`[ensure-chromium] $ ${cmd} ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    child.on('error', (e) => reject(new Error(`[ensure-chromium] could not start ${cmd}: ${e.message}. ${MISSING_MESSAGE}`)));
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`[ensure-chromium] \`${cmd} ${args.join(' ')}\` failed (${signal ?? `exit ${code}`}). ${MISSING_MESSAGE}`)),
    );
  });
}

/** Resolves to the Chromium path, installing it first when missing and running as root. */
export async function ensureChromium() {
  if (existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot) throw new Error(MISSING_MESSAGE);
  console.log(`[ensure-chromium] ${CHROMIUM_PATH} is missing; installing Debian's chromium package (running as root).`);
  await run('apt-get', ['update']);
  await run('apt-get', ['install', '-y', 'chromium']);
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`[ensure-chromium] apt-get finished but ${CHROMIUM_PATH} is still missing. ${MISSING_MESSAGE}`);
  console.log(`[ensure-chromium] installed ${CHROMIUM_PATH}.`);
  return CHROMIUM_PATH;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureChromium().then(
    (p) => console.log(`[ensure-chromium] ok: ${p}`),
    (e) => {
      console.error(e instanceof Error ? e.message : String(e));
      process.exit(1);
    },
  );
}
