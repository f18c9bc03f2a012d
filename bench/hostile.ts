/**
 * `npx tsx bench/hostile.ts [class…]`: time to refusal and peak memory of each hostile input class
 * (tests/helpers/hostile.ts builds them), each in a fresh child process so its peak RSS is its own,
 * killed after --timeout seconds. Prints one table row per class: outcome (the first line of the
 * message, or "timeout"), seconds from the read call to the refusal, the child's peak RSS.
 * docs/performance.md ("Hostile inputs") keeps the figures.
 *
 * Not here: whether the message is right (tests/hostile*.test.ts check each one).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseExperimentFile } from '../src/app/savefile';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { HfTokenizer } from '../src/model/hfTokenizer';
import { CHAT_TEMPLATE, hfCheckpoint, tinyTokenizerJson, writeHfFolder } from '../tests/helpers/hfCheckpoint';
import { bigVocabTokenizer, containerBomb, deepJson, extraEntriesFolder, gzipBomb, regexTokenizer, RUNAWAY_PATTERNS, RUNAWAY_TEMPLATES } from '../tests/helpers/hostile';

const enc = (o: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(o));
const GiB = 2 ** 30;

/** Each class: build the input (not timed), then the timed read that must refuse it. */
const CLASSES: Record<string, () => () => Promise<string>> = {
  'gzip: 8 GiB of zeros': () => { const b = gzipBomb(8 * GiB); return async () => expFail(b); },
  'gzip: 1 GiB − 64 zeros': () => { const b = gzipBomb(GiB - 64); return async () => expFail(b); },
  'gzip: container, one 1 GiB f64 blob': () => { const b = containerBomb(GiB / 8); return async () => expFail(b); },
  'safetensors: 1,000,000 extra entries': () => { const f = extraEntriesFolder(1_000_000); return () => hfFail(f); },
  'config.json 100,000 deep': () => { const f = new Map(hfCheckpoint().files); f.set('config.json', deepJson(100_000)); return () => hfFail(f); },
  ...Object.fromEntries(RUNAWAY_PATTERNS.map((p) => [`regex ${p}, 40-char prompt`, () => () => tokFail(regexTokenizer(p), {}, 'a'.repeat(40))])),
  ...Object.fromEntries(Object.entries(RUNAWAY_TEMPLATES).map(([k, t]) => [`template: ${k}`, () => () => tokFail(tinyTokenizerJson(), { eos_token: '<|im_end|>', chat_template: t })])),
  'vocab 2,000,000 entries vs vocab_size 272': () => { const f = new Map(hfCheckpoint().files); f.set('tokenizer.json', bigVocabTokenizer(2_000_000)); return () => hfFail(f); },
  'folder: model.safetensors → /dev/zero': () => { const d = folder((dir) => symlinkSync('/dev/zero', join(dir, 'model.safetensors'))); return () => cliFail(d); },
  'folder: config.json is a FIFO': () => { const d = folder((dir) => spawnSync('mkfifo', [join(dir, 'config.json')])); return () => cliFail(d); },
};

function expFail(b: Uint8Array): string {
  const r = parseExperimentFile(b);
  return r.ok ? 'ACCEPTED' : r.error;
}

async function hfFail(files: Map<string, Uint8Array>): Promise<string> {
  try {
    await loadHfCheckpoint(files, { quant: 'q8' });
    return 'ACCEPTED';
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

async function tokFail(tj: unknown, tc: Record<string, unknown>, prompt?: string): Promise<string> {
  try {
    const t = new HfTokenizer(tj, { tokenizerConfig: tc, vocab: 272, turns: tc.chat_template ? 'chat' : 'plain' });
    if (prompt !== undefined) t.encode(prompt);
    return 'ACCEPTED';
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

function folder(edit: (dir: string) => void): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'sat-hostile-')), 'ck');
  mkdirSync(dir);
  const files = new Map(hfCheckpoint().files);
  files.delete('model.safetensors');
  files.delete('config.json');
  writeHfFolder(dir, files);
  writeFileSync(join(dir, 'config.json'), enc(hfCheckpoint().config));
  edit(dir);
  return dir;
}

async function cliFail(dir: string): Promise<string> {
  const { readHfFolder } = await import('../src/cli/hfSeat');
  try {
    await readHfFolder(dir);
    return 'ACCEPTED';
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

async function child(name: string): Promise<void> {
  const run = CLASSES[name]!();
  const t0 = performance.now();
  const msg = await run();
  const s = (performance.now() - t0) / 1000;
  process.stdout.write(JSON.stringify({ s, rss: process.resourceUsage().maxRSS / 1024, msg: msg.split('\n')[0]!.slice(0, 110) }));
}

function main(): void {
  const args = process.argv.slice(2);
  if (args[0] === '--child') return void child(args[1]!);
  const timeout = Number(process.env.HOSTILE_TIMEOUT ?? 60);
  const names = args.length > 0 ? Object.keys(CLASSES).filter((n) => args.some((a) => n.includes(a))) : Object.keys(CLASSES);
  console.log(`| class | time to refusal | peak RSS | outcome |\n|---|---|---|---|`);
  for (const name of names) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', name], { encoding: 'utf8', timeout: timeout * 1000, maxBuffer: 1 << 20 });
    if (r.error || r.status !== 0) {
      const why = r.error ? `timeout (> ${timeout} s)` : `exit ${r.status} ${r.signal ?? ''}: ${r.stderr.split('\n').filter((l) => l.trim()).slice(-1)[0]?.slice(0, 100) ?? ''}`;
      console.log(`| ${name} | — | — | ${why} |`);
      continue;
    }
    const o = JSON.parse(r.stdout) as { s: number; rss: number; msg: string };
    console.log(`| ${name} | ${o.s.toFixed(2)} s | ${o.rss.toFixed(0)} MiB | ${o.msg.replace(/\|/g, '\\|')} |`);
  }
}

main();
