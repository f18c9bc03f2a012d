/**
 * `npx tsx bench/hostile.ts [class…]`: time to refusal and peak memory of each hostile input class
 * (tests/helpers/hostile.ts builds them; the parent writes each to disk), each read in a fresh
 * child process so its peak RSS is its own — a checkpoint folder the way `--agent-model` reads it
 * (openHfFolder: the budgeted checkpointFolder job with the seat's head, then the load, its weights
 * read by range in a worker thread), an ONNX folder (each hostile
 * graph beside the tiny decoder export's JSON files) the way `--agent-model … --agent-onnx frozen`
 * reads it (readOnnxFolder: every file read and checked in the budgeted onnxFolder job, then readOnnx), a
 * run log the way `--import-log` reads it (printRunLog: the budgeted runLog job on its path), a
 * recipe the way the page checks it, an experiment file the way the page parses it — killed after HOSTILE_TIMEOUT seconds (default 60). Prints one table row per
 * class: outcome (the first line of the message, or "timeout"), seconds from the read call to the
 * refusal, the child's peak RSS. docs/performance.md ("Hostile inputs") keeps the figures.
 *
 * `npx tsx bench/hostile.ts --tokenizer [vocab] [rounds]`: the main-thread time a seated
 * checkpoint with a large legitimate tokenizer (tests/helpers/hostile.ts largeBpeFolder, default
 * 65,536 ids, the most a seat takes) costs, alternating before (the tokenizer built and the
 * context measured on that thread, as src/workers/remoteTeam.ts did) and after (its JSON files
 * cloned for the check's worker), and the check's own time in a worker thread.
 *
 * `npx tsx bench/hostile.ts --page [rounds] [dist…]`: the experiment-file bombs and a legitimate
 * 64 MiB experiment in the page, each picked on Import as a person picks it in a freshly opened
 * page, timed from the pick to the banner (the refusal, or the opened file's notice); then, in the
 * same page, a fresh check worker (input.worker) timed apart — its start (and an empty worker's),
 * then the job alone (and, once a round in a fresh context, a first check worker started cold);
 * the page's own share of a pick (its change event to the banner) is timed in the page too. Beside
 * each time, the peak memory of the page's renderer process (a page and its dedicated workers
 * share it): its peak RSS reset before (`/proc/<pid>/clear_refs`, needs root) and read after
 * (`VmHWM`), with its rise over the RSS before and its ratio to the legitimate file's peak. Each
 * `dist` is a built page (`vite build --outDir`; default: this tree, built now); rounds alternate
 * between them, so two builds compare in one run; the medians per build close the output. Then,
 * each in a freshly opened page holding a shared two-agent arith-team (its language team unfolded),
 * the hostile checkpoint folders (the folder classes above a browser can hand over: runaway regexes
 * and templates, the big vocabulary, the extra safetensors entries, the deep config.json) picked as
 * a folder on agent 1's "Your own checkpoint…" (`setInputFiles` with the folder's path), beside the
 * largest legitimate folder a seat takes (largeBpeFolder, 65,536 ids) and the tiny checkpoint; and
 * every hostile recipe YAML class picked on Import, beside the recipe the page exports for the team
 * (its protocol independent: the only one the SAT authors' trainer takes) and the 4,990-key one.
 * Seats are stored f32 (the reference's width, 16, is no q8 block). Per input, its outcome (the
 * banner's first line), pick to banner, change event to banner and the renderer's peak with its
 * ratio to its kind's legitimate reference, and the longest main-thread task from the pick to
 * 1.5 s after the banner — for an opened run log, after every chart it can draw is drawn (pick to
 * charts; its renderer peak spans that too) — (the Long Tasks API), medians over the rounds. The same for the ONNX
 * classes (each graph beside the tiny decoder export's JSON files, picked on agent 1's card, against
 * that export) and the run logs (picked on Import, against the legitimate 60 MB verl log, whose
 * charts are drawn after its banner). `HOSTILE_PAGE=a,b` keeps only
 * the inputs whose names contain a or b (and each kind's reference).
 *
 * Not here: whether the message is right (tests/hostile*.test.ts check each one).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { parseExperimentFile, serializeExperiment } from '../src/app/savefile';
import { DEFAULT_MODELS, recipe } from '../src/bridge/recipe';
import type { Config } from '../src/sat/config';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { presetConfig } from '../src/sat/presets';
import { hfCheckpoint, writeHfFolder } from '../tests/helpers/hfCheckpoint';
import { bigVocabTokenizer, containerBomb, largeBpeFolder, deepJson, extraEntriesFolder, gzipBomb, onnxCycle, onnxExternalOffset, onnxFloatChunks, onnxIdentityNodes, onnxNestedIf, onnxPackedInts, onnxScalarInitializers, regexTokenizer, RUNAWAY_PATTERNS, RUNAWAY_TEMPLATES } from '../tests/helpers/hostile';
import { onnxFolder } from '../tests/helpers/onnxFolder';

const GiB = 2 ** 30;

/** An input: an experiment file's bytes, or a checkpoint folder (its files, then an edit on disk). */
type Input = { readonly file: Uint8Array; readonly ext?: string } | { readonly folder: ReadonlyMap<string, Uint8Array>; readonly edit?: (dir: string) => void; readonly onnx?: boolean };

const folderWith = (name: string, bytes: Uint8Array | Record<string, unknown>): Input => ({
  folder: new Map(hfCheckpoint().files).set(name, bytes instanceof Uint8Array ? bytes : new TextEncoder().encode(JSON.stringify(bytes))),
});

/**
 * The CLI door's classes (kept apart from the page's picks): a recipe whose `sat` section is a list,
 * a generation dump past the rows cap (refused by its lines before one is parsed), and a checkpoint
 * of 42 M parameters (BF16, 84 MB) whose weights are read by range in the worker thread — the
 * reference for what a legitimate load costs through the door.
 */
const CLI_DOOR_CLASSES: Record<string, () => Input> = {
  'cli door: recipe whose sat section is a list': () => ({ file: new TextEncoder().encode('sat:\n  - 0.2\n  - 4\ntraining:\n  num_stages: 3\n'), ext: 'yaml' }),
  'cli door: generation dump of 500,001 rows': () => ({ file: new TextEncoder().encode(Array.from({ length: 500_001 }, (_, i) => `{"input": "<a${i % 3}> q", "output": "${i}", "score": 1, "step": ${i % 7}}\n`).join('')), ext: 'jsonl' }),
  'cli door: 42 M-parameter BF16 checkpoint by range (reference)': () => ({ folder: hfCheckpoint({ vocab: 32_000, d: 512, layers: 8, heads: 8, kvHeads: 4, hidden: 1408, tied: true, dtype: 'BF16', maxPositions: 2048 }).files }),
};

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
  'onnx: float_data in 450,000 one-value chunks (1.8 MB)': () => onnxPageFolder(onnxFloatChunks(450_000)),
  'onnx: 1,000,000 Identity nodes': () => onnxPageFolder(onnxIdentityNodes(1_000_000)),
  'onnx: 1,000,000 scalar initializers': () => onnxPageFolder(onnxScalarInitializers(1_000_000)),
  'onnx: a graph cycle': () => onnxPageFolder(onnxCycle()),
  'onnx: If nested 10,000 deep': () => onnxPageFolder(onnxNestedIf(10_000)),
  'onnx: external-data offset "0x0"': () => onnxPageFolder(new Map([...onnxExternalOffset('0x0')].map(([n, b]) => [n === 'm.onnx' ? 'model.onnx' : n, b]))),
  'onnx: a packed list of 500,000 ints': () => onnxPageFolder(onnxPackedInts(500_000)),
  'legitimate: a decoder export (reference)': () => onnxPageFolder(),
  'run log: SAT trainer, a 150 kB digit run': () => ({ file: new TextEncoder().encode(`=== Stage 1/2 ===\nStage lower bound: ${'1'.repeat(150_000)}x\n`), ext: 'log' }),
  'run log: verl console, a 150 kB digit run': () => ({ file: new TextEncoder().encode(`step:1 - a:${'1'.repeat(150_000)}x\n`), ext: 'log' }),
  'run log: one 50 MB line': () => ({ file: new TextEncoder().encode(`{"step": 1, "data": {"a": "${'x'.repeat(50_000_000)}"}}\n`), ext: 'jsonl' }),
  'run log: 1,000,000 metric keys': () => ({ file: new TextEncoder().encode(`{"step": 1, "data": {${Array.from({ length: 1_000_000 }, (_, i) => `"k${i}": 1`).join(', ')}}}\n`), ext: 'jsonl' }),
  'run log: 200 MB': () => ({ file: new Uint8Array(200 * 2 ** 20).fill(0x31), ext: 'log' }),
  'legitimate: a 60 MB verl file log (reference)': () => ({ file: verlLog(60 * 2 ** 20), ext: 'jsonl' }),
  'recipe YAML: flow sequence 100,000 deep': () => ({ file: new TextEncoder().encode(`sat: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`), ext: 'yaml' }),
  'recipe YAML: 20,000 quoted keys': () => ({ file: new TextEncoder().encode(`{${Array.from({ length: 20_000 }, (_, i) => `'${i}' : 1`).join(',\n')}}\n`), ext: 'yaml' }),
  'recipe YAML: !!js/function': () => ({ file: new TextEncoder().encode('sat: {}\nx: !!js/function "function () { return 1 }"\n'), ext: 'yaml' }),
  'recipe YAML: compact sequences 129 deep over 16 lines': () => ({ file: new TextEncoder().encode(`sat:\n${Array.from({ length: 16 }, (_, k) => `${' '.repeat(2 + 16 * k)}${'- '.repeat(7)}-`).join('\n')} x\n`), ext: 'yaml' }),
  'legitimate: a recipe of 4,990 keys (reference)': () => ({ file: new TextEncoder().encode('sat: {}\n' + Array.from({ length: 4_990 }, (_, i) => `k${i}: 1\n`).join('')), ext: 'yaml' }),
  'legitimate: the tiny checkpoint (reference)': () => ({ folder: hfCheckpoint({ maxPositions: 128 }).files }),
  'legitimate: a 64 MiB experiment (35 MB file; reference)': () => ({ file: legitimateExperiment(64 * 2 ** 20) }),
  ...CLI_DOOR_CLASSES,
};

/**
 * A valid experiment (parseExperimentFile accepts it) whose contents are `bytes` long: an arith-team
 * at its start, each agent's weights and optimizer state random f32 values stored as f64, as a
 * trained language team's are — the size of a big real export, and about as compressible.
 */
function legitimateExperiment(bytes: number): Uint8Array {
  const config = presetConfig('arith-team', {});
  const n = config.agents;
  const p = Math.floor(bytes / 8 / n / 3);
  const agents = Array.from({ length: n }, (_, a) => {
    const params = new Float64Array(p);
    const optim = new Float64Array(1 + 2 * p);
    optim[0] = 12;
    for (let i = 0; i < p; i++) {
      params[i] = Math.fround((Math.random() - 0.5) * 0.2);
      optim[1 + i] = Math.fround((Math.random() - 0.5) * 1e-3);
      optim[1 + p + i] = Math.fround(Math.random() * 1e-6);
    }
    return { snapshot: { params, optim }, info: { name: `arithmetic-S#${a}`, kind: 'lm' as const, parameters: p, backend: 'cpu' } };
  });
  return serializeExperiment({ config, presetName: 'arith-team', createdAt: '2026-12-02T00:00:00.000Z', stages: [], agents, betas: agents.map(() => config.beta), cursor: { stage: 0 } });
}

/**
 * A verl file log (one {"step", "data"} line per step, 100 metrics a step) of about `bytes` bytes: a
 * long real run's size, with the keys the charts read (the training reward, the update's KL and clip
 * fraction every step, the validation score every tenth), so an opened one draws all its charts.
 */
function verlLog(bytes: number): Uint8Array {
  const named = ['critic/score/mean', 'actor/ppo_kl', 'actor/pg_clipfrac'];
  const line = (step: number) => `${JSON.stringify({ step, data: { ...Object.fromEntries(Array.from({ length: 100 - named.length - (step % 10 === 0 ? 1 : 0) }, (_, i) => [`actor/metric_${i}`, Math.random()])), ...Object.fromEntries(named.map((k) => [k, Math.random()])), ...(step % 10 === 0 ? { 'val-core/arith/acc/mean@1': Math.random() } : {}) } })}\n`;
  const per = line(0).length;
  return new TextEncoder().encode(Array.from({ length: Math.floor(bytes / per) }, (_, s) => line(s)).join(''));
}

/** What the CLI does with an ONNX folder for a frozen seat of arith-team: read the folder (every file read and checked in the budgeted worker), then parse the graph as a seat does. */
async function onnxPath(dir: string): Promise<string> {
  const [{ readOnnxFolder }, { readOnnx }] = await Promise.all([import('../src/cli/onnxSeat'), import('../src/model/onnx/read')]);
  const { files } = await readOnnxFolder(dir, 'model.onnx', 2 ** 32, { settings: presetConfig('arith-team', {}), mode: 'frozen' });
  const m = readOnnx(files, 'model.onnx');
  return `ACCEPTED: ${m.nodes.length} nodes, ${m.initializers.size} initializers`;
}

/** What `--import-log` does: the file's size checked, then read and parsed in the budgeted worker. */
async function logPath(path: string): Promise<string> {
  const { printRunLog } = await import('../src/cli/bridge');
  const log = console.log;
  console.log = () => {}; // the tables are not the bench's
  try {
    await printRunLog(path);
  } finally {
    console.log = log;
  }
  return 'ACCEPTED';
}

/** What the CLI does with --agent-model up to the weights: the folder read and its head checked in the budgeted worker (checkpointFolder), then loaded, the weights read by range in the worker. */
async function seatPath(dir: string): Promise<string> {
  const { openHfFolder } = await import('../src/cli/hfSeat');
  const folder = await openHfFolder(dir, { settings: presetConfig('arith-team', {}) });
  try {
    const m = await loadHfCheckpoint(folder.files, { quant: 'q8' });
    return `ACCEPTED as ${JSON.stringify(m.name)}`;
  } finally {
    await folder.close();
  }
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
    msg = statSync(path).isDirectory()
      ? existsSync(join(path, 'model.onnx')) ? await onnxPath(path) : await seatPath(path)
      : path.endsWith('.yaml') ? await recipePath(path)
      : /\.(log|jsonl)$/.test(path) ? await logPath(path)
      : ((r) => (r.ok ? 'ACCEPTED' : r.error))(parseExperimentFile(new Uint8Array(readFileSync(path))));
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

/** The experiment files `--page` picks: the two gzip bombs, the container bomb and the legitimate reference. */
const PAGE_FILES: Record<string, () => Uint8Array> = {
  'bomb-1GiB': () => gzipBomb(GiB - 64),
  'bomb-8GiB': () => gzipBomb(8 * GiB),
  'container-1GiB': () => containerBomb(GiB / 8),
  'legit-64MiB': () => legitimateExperiment(64 * 2 ** 20),
};
/** How long `--page` waits for a folder's or a recipe's banner. */
const PICK_TIMEOUT_MS = 60_000;
/** The file whose peak the others are held against (a ratio under 2 is the goal). */
const PAGE_REFERENCE = 'legit-64MiB';

/**
 * What `--page` picks in a page holding a team: the folder classes a browser can hand over (no
 * links, FIFOs or sub-folders) on agent 1's card, the recipes on Import. The one of each kind
 * named "(reference)" is the legitimate input its kind's peaks are held against.
 */
interface PagePick {
  readonly kind: 'seat' | 'onnx' | 'recipe' | 'log';
  readonly input: Input;
}

/**
 * The tiny decoder export's folder (config.json, tokenizer, model.onnx at the top), its graph
 * replaced by `graph` when given (a graph's bytes, or the graph and its data files by name): what
 * the CLI and the page need to reach the graph's check.
 */
function onnxPageFolder(graph?: Uint8Array | ReadonlyMap<string, Uint8Array>): Input {
  const files = new Map([...onnxFolder({}, { weights: 'f32' }).files].map(([n, b]) => [n === 'onnx/model.onnx' ? 'model.onnx' : n, b] as const));
  if (graph instanceof Uint8Array) files.set('model.onnx', graph);
  else if (graph !== undefined) {
    for (const n of [...files.keys()]) if (!n.endsWith('.json')) files.delete(n);
    for (const [n, b] of graph) files.set(n, b);
  }
  return { folder: files, onnx: true };
}
const PAGE_PICKS: Record<string, (team: Config) => PagePick> = {
  ...Object.fromEntries(
    Object.entries(CLASSES)
      .filter(([k]) => /^(regex|template|vocab|safetensors|config\.json)/.test(k))
      .map(([k, f]) => [k, (): PagePick => ({ kind: 'seat', input: f() })]),
  ),
  'legitimate: a BPE checkpoint of 65,536 ids (reference)': () => ({ kind: 'seat', input: { folder: largeBpeFolder(65_536) } }),
  'legitimate: the tiny checkpoint': () => ({ kind: 'seat', input: CLASSES['legitimate: the tiny checkpoint (reference)']!() }),
  // Every hostile recipe class on Import.
  ...Object.fromEntries(Object.entries(CLASSES).filter(([k]) => k.startsWith('recipe YAML:')).map(([k, f]) => [k, (): PagePick => ({ kind: 'recipe', input: f() })])),
  'legitimate: the page\'s exported recipe (reference)': (team) => ({ kind: 'recipe', input: { file: new TextEncoder().encode(recipe({ ...team, protocol: 'independent' }, DEFAULT_MODELS, 1, 'arith-team.sat.yaml').yaml!), ext: 'yaml' } }),
  'legitimate: a recipe of 4,990 keys': () => ({ kind: 'recipe', input: CLASSES['legitimate: a recipe of 4,990 keys (reference)']!() }),
  // ONNX folders on agent 1's card: the tiny export's JSON files beside each hostile graph.
  ...Object.fromEntries(
    Object.entries(CLASSES)
      .filter(([k]) => k.startsWith('onnx:') && !k.includes('external-data'))
      .map(([k, f]) => [k, (): PagePick => ({ kind: 'onnx', input: f() })]),
  ),
  'legitimate: a decoder export (reference)': () => ({ kind: 'onnx', input: onnxPageFolder() }),
  // Run logs on Import.
  ...Object.fromEntries(Object.entries(CLASSES).filter(([k]) => k.startsWith('run log:') || k.includes('60 MB verl')).map(([k, f]) => [k, (): PagePick => ({ kind: 'log', input: f() })])),
};

/**
 * In the page: notes when the file input `input`'s change event fires and when the banner first
 * differs from `before` (with `idle`, once no page-wide progress is shown too: a seat or a recipe
 * opened builds a team) (window.__pickedAt, __shownAt), so the page's own share of a pick is timed
 * apart from the driver's.
 */
const WATCH_PICK = ([before, input, idle]: [string, string, boolean]): void => {
  const w = window as unknown as { __pickedAt: number; __shownAt: number; __longest: number };
  w.__pickedAt = NaN;
  w.__shownAt = NaN;
  // The longest main-thread task that started after the change event (Long Tasks API: tasks over 50 ms; 0 when none).
  w.__longest = 0;
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) if (e.startTime >= w.__pickedAt) w.__longest = Math.max(w.__longest, e.duration);
  }).observe({ type: 'longtask' });
  document.querySelector(`[data-testid="${input}"]`)!.addEventListener('change', () => void (w.__pickedAt = performance.now()), { capture: true, once: true });
  const seen = new MutationObserver(() => {
    const t = [...document.querySelectorAll('[data-testid="error"], [data-testid="notice"]')].map((e) => e.textContent).join('\n');
    if (t !== '' && t !== before && !(idle && document.querySelector('[data-testid="progress"]'))) {
      w.__shownAt = performance.now();
      seen.disconnect();
    }
  });
  seen.observe(document.body, { subtree: true, childList: true, characterData: true });
};

/** In the page: an empty worker's start (ms). */
const EMPTY_WORKER = `(async () => {
  const t = performance.now();
  const w = new Worker(URL.createObjectURL(new Blob(['onmessage = () => postMessage(0)'], { type: 'text/javascript' })), { type: 'module' });
  await new Promise((res) => { w.onmessage = res; w.postMessage(0); });
  w.terminate();
  return performance.now() - t;
})()`;

/** In the page: a fresh check worker's start (a one-byte job), then the file's job alone (ms). */
const CHECK_ALONE = `(async ([worker, name]) => {
  const reply = (w, msg, transfer) => new Promise((res) => { w.onmessage = (e) => res(e.data); w.postMessage(msg, transfer); });
  const bytes = new Uint8Array(await (await fetch('/' + name + '.satexp')).arrayBuffer());
  let t = performance.now();
  const w = new Worker('/assets/' + worker, { type: 'module' });
  await reply(w, { job: 'experimentFile', input: Uint8Array.of(1) }, []);
  const start = performance.now() - t;
  t = performance.now();
  await reply(w, { job: 'experimentFile', input: bytes }, [bytes.buffer]);
  const job = performance.now() - t;
  w.terminate();
  return { start, job };
})`;

/**
 * The renderer processes of the browser this process started (Chromium's children with
 * `--type=renderer`): a page and its dedicated workers run in one of them.
 */
function renderers(): number[] {
  const parent = (pid: number): number => Number(/\) \S+ (\d+)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1] ?? 0);
  const mine = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 16; hops++) if ((p = parent(p)) === process.pid) return true;
    return false;
  };
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer') && mine(pid);
    } catch {
      return false; // gone meanwhile
    }
  });
}

/** A /proc/<pid>/status field in MiB (0 for a process gone). */
function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/**
 * Peak memory of the renderers over `f`: each renderer's peak RSS reset to its RSS before
 * (`clear_refs` 5), then its VmHWM read after; the largest renderer's peak, and its rise over its
 * RSS before (MiB).
 */
async function rendererPeak<T>(f: () => Promise<T>): Promise<{ value: T; peak: number; rise: number }> {
  const pids = renderers();
  const before = new Map<number, number>();
  for (const pid of pids) {
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch {
      // not ours to reset (not root): the peak is then the process's lifetime peak
    }
    before.set(pid, statusMiB(pid, 'VmRSS'));
  }
  const value = await f();
  let peak = 0;
  let rise = 0;
  for (const pid of pids) {
    const hwm = statusMiB(pid, 'VmHWM');
    if (hwm > peak) [peak, rise] = [hwm, hwm - before.get(pid)!];
  }
  return { value, peak, rise };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The `--page` mode (header). */
async function pageBench(rounds: number, dists: string[]): Promise<void> {
  const { cpSync } = await import('node:fs');
  const { chromium } = await import('playwright-core');
  const { build, preview } = await import('vite');
  const { CHROMIUM_ARGS, ROOT, settled, TINY_ARITH_TEAM } = await import('../tests/e2e/harness');
  const { encodeShare, makeShareState } = await import('../src/app/share');
  const only = process.env.HOSTILE_PAGE?.split(',').filter((x) => x !== '');
  const kept = (name: string): boolean => !only || only.some((x) => name.includes(x));
  // The files kept, with their reference; the folders and recipes kept, with theirs ("(reference)" in the name).
  const fileNames = Object.keys(PAGE_FILES).filter(kept);
  const files = Object.fromEntries((fileNames.length > 0 ? [...new Set([...fileNames, PAGE_REFERENCE])] : []).map((k) => [k, PAGE_FILES[k]!()]));
  // Each folder and recipe written to disk once, built one at a time (the big vocabulary is 180 MB).
  const picks = Object.entries(PAGE_PICKS)
    .filter(([k]) => kept(k) || k.includes('(reference)'))
    .map(([name, f]) => {
      const pick = f(TINY_ARITH_TEAM);
      return [name, { kind: pick.kind, path: write(pick.input) }] as const;
    });
  if (dists.length === 0) {
    const out = mkdtempSync(join(tmpdir(), 'sat-hostile-dist-'));
    process.env.NODE_ENV = 'production';
    await build({ root: ROOT, mode: 'production', logLevel: 'error', build: { outDir: out, emptyOutDir: true, sourcemap: false } });
    dists.push(out);
  }
  const pages: { name: string; url: string; dir: string; worker: string; workerKb: number }[] = [];
  for (const d of dists) {
    const dir = mkdtempSync(join(tmpdir(), 'sat-hostile-page-'));
    cpSync(d, dir, { recursive: true });
    for (const [k, v] of Object.entries(files)) writeFileSync(join(dir, `${k}.satexp`), v);
    const server = await preview({ root: ROOT, logLevel: 'error', build: { outDir: dir }, preview: { host: '127.0.0.1', port: 0, open: false } });
    const port = (server.httpServer.address() as { port: number }).port;
    const worker = readdirSync(join(dir, 'assets')).find((f) => /^input\.worker-.*\.js$/.test(f))!;
    pages.push({ name: d, url: `http://127.0.0.1:${port}/`, dir, worker, workerKb: statSync(join(dir, 'assets', worker)).size / 1000 });
  }
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  const team = `#${(await encodeShare(makeShareState(TINY_ARITH_TEAM, { preset: 'arith-team' }))).replace(/^#/, '')}`;
  /** A fresh page holding the shared team, its language team's cards unfolded, settled. */
  const teamPage = async (url: string): Promise<Page> => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await ctx.addInitScript(() => localStorage.setItem('sat-playground.fold.team-lm', 'open'));
    const p = await ctx.newPage();
    await p.goto(url + team, { waitUntil: 'networkidle' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    return p;
  };
  const outcomes = pages.map(() => new Map<string, string[]>());
  const shown = () => [...document.querySelectorAll('[data-testid="error"], [data-testid="notice"]')].map((e) => e.textContent).join('\n');
  /** Per build, per measure ("bomb-1GiB page", "bomb-1GiB page peak", …): the rounds' values. */
  const seen = pages.map(() => new Map<string, number[]>());
  const note = (i: number, k: string, v: number): void => void seen[i]!.set(k, [...(seen[i]!.get(k) ?? []), v]);
  for (let r = 0; r < rounds; r++) {
    for (const [i, pg] of pages.entries()) {
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      const row: Record<string, number> = {};
      let said = '';
      if (Object.keys(files).length > 0) {
        // A first check worker in a fresh context (its own HTTP cache): started cold, as a pick's is.
        const p = await (await browser.newContext()).newPage();
        await p.goto(pg.url, { waitUntil: 'networkidle' });
        await settled(p);
        const c = (await p.evaluate(`${CHECK_ALONE}(${JSON.stringify([pg.worker, Object.keys(files)[0]])})`)) as { start: number; job: number };
        row['cold check worker start'] = c.start;
        row['cold first job'] = c.job;
        await p.context().close();
      }
      for (const name of Object.keys(files)) {
        // A fresh page per file: the peak is this file's alone, on a page that has just opened.
        const p = await (await browser.newContext()).newPage();
        await p.goto(pg.url, { waitUntil: 'networkidle' });
        await p.waitForSelector('[data-testid="import"]:not([disabled])');
        await settled(p); // the page's own start (its chunks, the first stage's table) done before the pick
        const before = await p.evaluate(shown);
        await p.evaluate(WATCH_PICK, [before, 'import', false] as [string, string, boolean]);
        const t0 = Date.now();
        const m = await rendererPeak(async () => {
          await p.getByTestId('import').setInputFiles(join(pg.dir, `${name}.satexp`));
          await p.waitForFunction((b) => { const t = [...document.querySelectorAll('[data-testid="error"], [data-testid="notice"]')].map((e) => e.textContent).join('\n'); return t !== '' && t !== b; }, before, { timeout: 120_000, polling: 20 });
          return Date.now() - t0;
        });
        row[`${name} page`] = m.value;
        row[`${name} change to banner`] = (await p.evaluate('window.__shownAt - window.__pickedAt')) as number;
        row[`${name} page peak`] = m.peak;
        row[`${name} page rise`] = m.rise;
        said = await p.evaluate(shown);
        const c = await rendererPeak(() => p.evaluate(`${CHECK_ALONE}(${JSON.stringify([pg.worker, name])})`) as Promise<{ start: number; job: number }>);
        row[`${name} worker start`] = c.value.start;
        row[`${name} job`] = c.value.job;
        row[`${name} job peak`] = c.peak;
        row[`${name} job rise`] = c.rise;
        if (name === Object.keys(files)[0]) row['empty worker start'] = (await p.evaluate(EMPTY_WORKER)) as number;
        await p.context().close();
      }
      for (const [name, pick] of picks) {
        // A fresh page holding the team per input, as for the files; the pick, then the banner once no page-wide progress is shown.
        const p = await teamPage(pg.url);
        const card = pick.kind === 'seat' || pick.kind === 'onnx';
        const input = card ? 'checkpoint-1-input' : 'import';
        if (card) await p.getByTestId('checkpoint-1-quant').selectOption('f32'); // the reference's width, 16, is no q8 block
        const before = await p.evaluate(shown);
        await p.evaluate(WATCH_PICK, [before, input, true] as [string, string, boolean]);
        const t0 = Date.now();
        const m = await rendererPeak(async () => {
          await p.getByTestId(input).setInputFiles(pick.path);
          try {
            await p.waitForFunction((b) => { const t = [...document.querySelectorAll('[data-testid="error"], [data-testid="notice"]')].map((e) => e.textContent).join('\n'); return t !== '' && t !== b && !document.querySelector('[data-testid="progress"]'); }, before, { timeout: PICK_TIMEOUT_MS, polling: 20 });
          } catch {
            return NaN; // no banner in time: "timeout" below
          }
          const banner = Date.now() - t0;
          if (pick.kind === 'log' && /^Opened the run log/.test(await p.evaluate(shown))) {
            // An opened log: until each chart it can draw is drawn (pick to charts), its memory and tasks counted too.
            await p.waitForFunction(() => [...document.querySelectorAll('[data-testid="runlog"] [data-points]')].every((c) => c.getAttribute('data-points') === '0' || c.querySelector('svg .recharts-line, li')), undefined, { timeout: PICK_TIMEOUT_MS, polling: 20 });
            row[`${name} pick to charts`] = Date.now() - t0;
          }
          return banner;
        });
        row[`${name} page`] = m.value;
        row[`${name} change to banner`] = (await p.evaluate('window.__shownAt - window.__pickedAt')) as number;
        row[`${name} page peak`] = m.peak;
        row[`${name} page rise`] = m.rise;
        await p.waitForTimeout(1_500); // what the page does after the banner counted too
        row[`${name} longest task`] = (await p.evaluate('window.__longest')) as number;
        const out = Number.isNaN(m.value) ? `timeout (> ${PICK_TIMEOUT_MS / 1000} s)` : await p.evaluate(() => (document.querySelector('[data-testid="error"]')?.textContent || document.querySelector('[data-testid="notice"]')?.textContent || '').split('\n')[0]!.replace(/×$/, '').slice(0, 140)); // less the banner's close button
        outcomes[i]!.set(name, [...(outcomes[i]!.get(name) ?? []), out]);
        await p.context().close();
      }
      for (const [k, v] of Object.entries(row)) note(i, k, v);
      console.log(`round ${r} ${pg.name} (load ${load}): ${Object.entries(row).map(([k, v]) => `${k} ${v.toFixed(0)}${/peak|rise/.test(k) ? ' MiB' : ' ms'}`).join(', ')}; last said: ${said.slice(0, 200)}`);
    }
  }
  await browser.close();
  for (const pg of pages) rmSync(pg.dir, { recursive: true, force: true }); // copies of the builds, with the files
  // Medians over the rounds, one table per build; peaks against the legitimate file's.
  for (const [i, pg] of pages.entries()) {
    const med = (k: string): number => median(seen[i]!.get(k) ?? [NaN]);
    if (Object.keys(files).length > 0) {
    console.log(`\n${pg.name}: input.worker entry ${pg.workerKb.toFixed(1)} kB; empty worker start ${med('empty worker start').toFixed(0)} ms; in a fresh context, a check worker's start ${med('cold check worker start').toFixed(0)} ms and its first job (${Object.keys(files)[0]}) ${med('cold first job').toFixed(0)} ms (medians of ${rounds})`);
    console.log('| file | pick to banner | change event to banner | page peak (rise) | ×reference | check worker start | job alone | job peak (rise) | ×reference |\n|---|---|---|---|---|---|---|---|---|');
    for (const name of Object.keys(files)) {
      console.log(`| ${name} | ${(med(`${name} page`) / 1000).toFixed(2)} s | ${(med(`${name} change to banner`) / 1000).toFixed(2)} s | ${med(`${name} page peak`).toFixed(0)} MiB (+${med(`${name} page rise`).toFixed(0)}) | ${(med(`${name} page peak`) / med(`${PAGE_REFERENCE} page peak`)).toFixed(2)} | ${(med(`${name} worker start`) / 1000).toFixed(2)} s | ${(med(`${name} job`) / 1000).toFixed(2)} s | ${med(`${name} job peak`).toFixed(0)} MiB (+${med(`${name} job rise`).toFixed(0)}) | ${(med(`${name} job peak`) / med(`${PAGE_REFERENCE} job peak`)).toFixed(2)} |`);
    }
    }
    // The folders and recipes: each against the reference of its kind; a pick with no banner in time is left out of the medians and counted.
    const ref = Object.fromEntries(picks.filter(([k]) => k.includes('(reference)')).map(([k, v]) => [v.kind, k]));
    console.log('\n| input | outcome (first line of the banner) | pick to banner | change event to banner | longest main-thread task | page peak (rise) | ×reference |\n|---|---|---|---|---|---|---|');
    for (const [name, v] of picks) {
      const done = (k: string): number => median((seen[i]!.get(k) ?? []).filter((x, j) => Number.isFinite(seen[i]!.get(`${name} page`)![j]!) && Number.isFinite(x)));
      const late = (seen[i]!.get(`${name} page`) ?? []).filter((x) => !Number.isFinite(x)).length;
      const said = [...new Set(outcomes[i]!.get(name) ?? [])].join(' / ').replace(/\|/g, '\\|');
      const charts = seen[i]!.has(`${name} pick to charts`) ? `; charts drawn ${(med(`${name} pick to charts`) / 1000).toFixed(2)} s` : '';
      console.log(`| ${name} | ${said} | ${(done(`${name} page`) / 1000).toFixed(2)} s${late > 0 ? ` (${late} of ${rounds} no banner)` : ''}${charts} | ${(done(`${name} change to banner`) / 1000).toFixed(2)} s | ${med(`${name} longest task`).toFixed(0)} ms | ${med(`${name} page peak`).toFixed(0)} MiB (+${med(`${name} page rise`).toFixed(0)}) | ${(med(`${name} page peak`) / med(`${ref[v.kind]} page peak`)).toFixed(2)} |`);
    }
  }
  for (const [, v] of picks) rmSync(dirname(v.path), { recursive: true, force: true });
  process.exit(0);
}

function main(): void {
  const args = process.argv.slice(2);
  if (args[0] === '--child') return void child(args[1]!);
  if (args[0] === '--page') return void pageBench(Number(args[1] ?? 2), args.slice(2));
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
