#!/usr/bin/env node
/**
 * Header comment lines per source file: median, max and the 10 longest, so the "a few lines per
 * header" rule (ARCHITECTURE convention 17) can be re-measured. A header is the first comment
 * block of a .ts/.tsx/.wgsl file under src/ and shaders/, before any code; a file that starts
 * with code has a header of 0 lines. `--over N` also lists every file whose header exceeds N.
 * Plain Node, no dependencies: `node scripts/header-stats.mjs [--over 15]`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..');
const DIRS = ['src', 'shaders'];
const EXT = /\.(ts|tsx|wgsl)$/;

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else if (EXT.test(name) && !name.endsWith('.d.ts')) yield path;
  }
}

/** Lines of the first comment block, skipping a shebang and blank lines before it. */
export function headerLines(text) {
  const lines = text.split('\n');
  let i = 0;
  if (lines[0]?.startsWith('#!')) i++;
  while (i < lines.length && lines[i].trim() === '') i++;
  const first = lines[i]?.trim() ?? '';
  if (first.startsWith('/*')) {
    let j = i;
    while (j < lines.length && !lines[j].includes('*/')) j++;
    return j - i + 1;
  }
  let j = i;
  while (j < lines.length && lines[j].trim().startsWith('//')) j++;
  return j - i;
}

const overArg = process.argv.indexOf('--over');
const over = overArg >= 0 ? Number(process.argv[overArg + 1]) : null;

const rows = [];
for (const dir of DIRS) {
  for (const path of walk(join(ROOT, dir))) {
    rows.push({ file: relative(ROOT, path), lines: headerLines(readFileSync(path, 'utf8')) });
  }
}
rows.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
const sorted = rows.map((r) => r.lines).sort((a, b) => a - b);
const mid = sorted.length >> 1;
const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;

console.log(`files: ${rows.length}  header lines: median ${median}, max ${sorted.at(-1)}`);
console.log('10 longest:');
for (const r of rows.slice(0, 10)) console.log(`  ${String(r.lines).padStart(4)}  ${r.file}`);
if (over !== null) {
  const long = rows.filter((r) => r.lines > over);
  console.log(`${long.length} files over ${over} lines:`);
  for (const r of long) console.log(`  ${String(r.lines).padStart(4)}  ${r.file}`);
}
