/**
 * `npx tsx bench/hostile.ts [class…]`: time to refusal and peak memory of each hostile input class
 * (tests/helpers/hostile.ts builds them; the parent writes each to disk), each read in a fresh
 * child process so its peak RSS is its own — a checkpoint folder the way `--agent-model` reads it
 * (readHfFolder, the budgeted head check in a worker thread, the load), an experiment file the way
 * the page parses it — killed after HOSTILE_TIMEOUT seconds (default 60). Prints one table row per class: outcome (the first line of the
 * message, or "timeout"), seconds from the read call to the refusal, the child's peak RSS.
 * docs/performance.md ("Hostile inputs") keeps the figures.
 *
 * `npx tsx bench/hostile.ts --tokenizer [vocab] [rounds]`: the main-thread time a seated checkpoint
 * with a large legitimate tokenizer (tests/helpers/hostile.ts largeBpeFolder, default 65,536 ids, the most a seat takes)
 * costs, alternating before (the tokenizer built and the context measured on that thread, as
 * src/workers/remoteTeam.ts did) and after (its JSON files cloned for the check's worker), and the
 * check's own time in a worker thread.
 *
 * Not here: whether the message is right (tests/hostile*.test.ts check each one).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeContainer, parseExperimentFile } from '../src/app/savefile';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { presetConfig } from '../src/sat/presets';
import { hfCheckpoint, writeHfFolder } from '../tests/helpers/hfCheckpoint';
import { bigVocabTokenizer, containerBomb, largeBpeFolder, deepJson, extraEntriesFolder, gzipBomb, regexTokenizer, RUNAWAY_PATTERNS, RUNAWAY_TEMPLATES } from '../tests/helpers/hostile';

const GiB = 2 ** 30;

/** An input: an experiment file's bytes, or a checkpoint folder (its files, then an edit on disk). */
type Input = { readonly file: Uint8Array; readonly ext?: string } | { readonly folder: ReadonlyMap<string, Uint8Array>; readonly edit?: (dir: string) => void };

const folderWith = (name: string, bytes: Uint8Array | Record<string, unknown>): Input => ({
  folder: new Map(hfCheckpoint().files).set(name, bytes instanceof Uint8Array ? bytes : new TextEncoder().encode(JSON.stringify(bytes))),
});

/** Each class: the input, built by the parent and written to disk before the child is timed. */
const CLASSES: Record<string, () => Input> = {
  'gzip: 8 GiB of zeros': () => ({ file: gzipBomb(8 * GiB) }),
  'gzip: 1 GiB − 64 zeros': () => ({ file: gzipBomb(GiB - 64) }),
  'gzip: container, one 1 GiB f64 blob': () => ({ file: containerBomb(GiB / 8) }),
  'safetensors: 1,000,000 extra entries': () => ({ folder: extraEntriesFolder(1_000_000) }),
  'config.json 100,000 deep': () => folderWith('config.json', deepJson(100_000)),
  ...Object.fromEntries(RUNAWAY_PATTERNS.map((p) => [`regex ${p}`, () => folderWith('tokenizer.json', regexTokenizer(p))])),
  ...Object.fromEntries(Object.entries(RUNAWAY_TEMPLATES).map(([k, t]) => [`template: ${k}`, () => folderWith('tokenizer_config.json', { eos_token: '<|im_end|>', chat_template: t })])),
  'vocab 10,000,000 entries vs vocab_size 272': () => folderWith('tokenizer.json', bigVocabTokenizer(10_000_000)),
  'folder: model.safetensors → /dev/zero': () => ({ folder: hfCheckpoint().files, edit: (d) => { rmSync(join(d, 'model.safetensors')); symlinkSync('/dev/zero', join(d, 'model.safetensors')); } }),
  'folder: config.json is a FIFO': () => ({ folder: hfCheckpoint().files, edit: (d) => { rmSync(join(d, 'config.json')); spawnSync('mkfifo', [join(d, 'config.json')]); } }),
  'folder: extra.json is a folder': () => ({ folder: hfCheckpoint().files, edit: (d) => mkdirSync(join(d, 'extra.json')) }),
  'recipe YAML: 2,000,000 keys (37 MB)': () => ({ file: new TextEncoder().encode('sat: {}\n' + Array.from({ length: 2_000_000 }, (_, i) => `key${String(i).padStart(11, '0')}: 1\n`).join('')), ext: 'yaml' }),
  'folder: _name_or_path of terminal escapes': () => folderWith('config.json', { ...hfCheckpoint().config, _name_or_path: '\u001b]0;TITLE\u0007\u001b[2J\u001b[31mRED\u001b[0m\r\nerror: fake line' }),
  'legitimate: a recipe of 4,990 keys (reference)': () => ({ file: new TextEncoder().encode('sat: {}\n' + Array.from({ length: 4_990 }, (_, i) => `k${i}: 1\n`).join('')), ext: 'yaml' }),
  'legitimate: the tiny checkpoint (reference)': () => ({ folder: hfCheckpoint({ maxPositions: 128 }).files }),
  'legitimate: a 64 MiB experiment file (reference)': () => ({ file: legitimateExperiment(64 * 2 ** 20) }),
};

/** A real experiment container (savefile.ts) whose one blob is `bytes` of random f64s: the size of a big real export. */
function legitimateExperiment(bytes: number): Uint8Array {
  const values = new Float64Array(bytes / 8);
  for (let i = 0; i < values.length; i++) values[i] = Math.random();
  return encodeContainer('{}', [values]);
}

/** What the CLI does with --agent-model up to the weights: read the folder, check its head in the budgeted worker, load. */
async function seatPath(dir: string): Promise<string> {
  const { readHfFolder } = await import('../src/cli/hfSeat');
  const { cliCheck } = await import('../src/cli/inputCheck');
  const files = await readHfFolder(dir);
  const json = [...files].filter(([n]) => n.endsWith('.json'));
  await cliCheck()('checkpointHead', { files: json, settings: presetConfig('arith-team', {}) }, dir);
  const m = await loadHfCheckpoint(files, { quant: 'q8' });
  return `ACCEPTED as ${JSON.stringify(m.name)}`;
}

/** What the page does with a picked recipe: its text read whole, then checked and parsed in the budgeted worker. */
async function recipePath(path: string): Promise<string> {
  const { cliCheck } = await import('../src/cli/inputCheck');
  await cliCheck()('recipe', { text: readFileSync(path, 'utf8'), base: presetConfig('arith-team', {}) }, path);
  return 'ACCEPTED';
}

async function child(path: string): Promise<void> {
  const t0 = performance.now();
  let msg: string;
  try {
    msg = statSync(path).isDirectory() ? await seatPath(path) : path.endsWith('.yaml') ? await recipePath(path) : ((r) => (r.ok ? 'ACCEPTED' : r.error))(parseExperimentFile(new Uint8Array(readFileSync(path))));
  } catch (e) {
    msg = e instanceof Error ? e.message : String(e);
  }
  const s = (performance.now() - t0) / 1000;
  process.stdout.write(JSON.stringify({ s, rss: process.resourceUsage().maxRSS / 1024, msg: msg.split('\n')[0]!.slice(0, 110) }));
}

function write(input: Input): string {
  const root = mkdtempSync(join(tmpdir(), 'sat-hostile-'));
  if ('file' in input) {
    const name = `x.${input.ext ?? 'satexp'}`;
    writeFileSync(join(root, name), input.file);
    return join(root, name);
  }
  const dir = join(root, 'ck');
  mkdirSync(dir);
  writeHfFolder(dir, input.folder);
  input.edit?.(dir);
  return dir;
}

/** The `--tokenizer` mode (header). */
async function tokenizerBench(vocab: number, rounds: number): Promise<void> {
  const { hfSeatContext } = await import('../src/sat/hfSeat');
  const { hfTokenizerOf, readHfConfig } = await import('../src/model/hfLoad');
  const { cliCheck } = await import('../src/cli/inputCheck');
  const files = largeBpeFolder(vocab);
  const head = [...files].filter(([n]) => n.endsWith('.json'));
  const cfg = presetConfig('arith-team', {});
  console.log(`tokenizer.json ${(files.get('tokenizer.json')!.length / 2 ** 20).toFixed(1)} MiB, ${vocab} ids`);
  for (let r = 0; r < rounds; r++) {
    let t = performance.now();
    const { cfg: mc, info } = readHfConfig(files, 512);
    const context = hfSeatContext(cfg, hfTokenizerOf(files, mc, info), info.maxPositions);
    const before = performance.now() - t;
    t = performance.now();
    structuredClone(head);
    const after = performance.now() - t;
    t = performance.now();
    const checked = await cliCheck()('checkpointHead', { files: head, settings: cfg }, 'bench');
    const worker = performance.now() - t;
    console.log(`round ${r}: main thread before ${before.toFixed(0)} ms (context ${context}), after ${after.toFixed(1)} ms; the check in its worker ${worker.toFixed(0)} ms (context ${checked.context})`);
  }
}

function main(): void {
  const args = process.argv.slice(2);
  if (args[0] === '--child') return void child(args[1]!);
  if (args[0] === '--tokenizer') return void tokenizerBench(Number(args[1] ?? 65_536), Number(args[2] ?? 3));
  const timeout = Number(process.env.HOSTILE_TIMEOUT ?? 60);
  const names = args.length > 0 ? Object.keys(CLASSES).filter((n) => args.some((a) => n.includes(a))) : Object.keys(CLASSES);
  console.log(`| class | time to refusal | peak RSS | outcome |\n|---|---|---|---|`);
  for (const name of names) {
    const path = write(CLASSES[name]!());
    // Through /usr/bin/time where it exists: Linux keeps a process's peak RSS across exec, so a child
    // forked from this (large) parent would report the parent's peak as its own.
    const node = [process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), '--child', path];
    const timed = existsSync('/usr/bin/time');
    const r = spawnSync(timed ? '/usr/bin/time' : node[0]!, timed ? ['-f', 'maxrss_kb=%M', ...node] : node.slice(1), { encoding: 'utf8', timeout: timeout * 1000, maxBuffer: 1 << 20 });
    const kb = /maxrss_kb=(\d+)/.exec(r.stderr ?? '')?.[1];
    rmSync(dirname(path), { recursive: true, force: true });
    if (r.error || r.status !== 0) {
      const why = r.error ? `timeout (> ${timeout} s)` : `exit ${r.status} ${r.signal ?? ''}: ${r.stderr.split('\n').filter((l) => l.trim()).slice(-1)[0]?.slice(0, 100) ?? ''}`;
      console.log(`| ${name} | — | — | ${why} |`);
      continue;
    }
    const o = JSON.parse(r.stdout) as { s: number; rss: number; msg: string };
    if (kb !== undefined) o.rss = Number(kb) / 1024;
    console.log(`| ${name} | ${o.s.toFixed(2)} s | ${o.rss.toFixed(0)} MiB | ${o.msg.replace(/\|/g, '\\|')} |`);
  }
}

main();
