/**
 * The checks of user-supplied input that run in a budgeted worker (budget.ts), by name: each a
 * plain function from structured-clonable input to structured-clonable output, so the same table
 * runs in a Web Worker (input.worker.ts), a Node worker thread (src/cli/inputWorker.ts) or — where
 * neither exists — in-process. A new input kind adds a row to `InputJobs` and `INPUT_JOBS`.
 *
 * Each row imports its checker when it runs (a dynamic import), so the page's build splits the
 * worker into one chunk per job and a fresh worker fetches and compiles only the code its one job
 * needs: an experiment file never pays for the tokenizers, the chat-template engine or the ONNX
 * reader. Hence the jobs are async and `runJob` returns a Promise.
 *
 * A failure the user can act on (a SatError) comes back as its class name and message
 * (`JobFailure`) and is rebuilt on the caller's side (budget.ts); anything else is a bug and is
 * reported as such.
 *
 * A file's bytes reach a job as a `ByteSource`: in the page a File (a Blob: the job reads it in the
 * worker, so a large file's bytes never enter the main thread), in the CLI a path (the job reads it
 * in the worker thread), in tests the bytes themselves. The job checks the size before it reads.
 *
 * This table is the only place a user's file is read and parsed (docs/models.md, "Input limits");
 * tests/hostile-door.test.ts holds every reader of src/ to it.
 *
 * Not here: the budgets and the worker's life (budget.ts), the checks themselves (savefile.ts,
 * hfLoad.ts, hfTokenizer.ts, hfSeat.ts, onnx/read.ts, bridge/runLog.ts, bridge/recipe.ts).
 */
import type { RunLog } from '../bridge/runLog';
import type { OpenedRun, RunLogCharts } from '../bridge/runLogCharts';
import type { GenerationDump } from '../bridge/generations';
import { FormatError, SatError } from '../core/errors';
import { escapeControl } from '../core/text';
import type { Config } from '../sat/config';
import type { ExperimentData, ParseResult } from '../app/savefile';
import type { HfContextSettings } from '../sat/hfSeatLimits';
import type { ModelConfig } from '../model/config';
import type { HfInfo } from '../model/hfConfig';
import type { OnnxSeatHead } from '../sat/onnxSeat';

/** A file's bytes as a job gets them (header): a path carries its size, so the budget knows it before the worker starts. */
export type ByteSource = Uint8Array | Blob | { readonly path: string; readonly size: number };

/** The size of a source, without reading it. */
export function sourceSize(s: ByteSource): number {
  return s instanceof Uint8Array ? s.byteLength : s.size;
}

/**
 * A path source opened for reading (node:fs, imported only then — never in the page): without
 * blocking, so a named pipe given or put in a checked file's place cannot stall the thread;
 * refused unless it is a regular file.
 */
async function openPath(s: { readonly path: string }): Promise<import('node:fs/promises').FileHandle> {
  const fs = 'node:fs';
  const { promises, constants } = (await import(/* @vite-ignore */ fs)) as typeof import('node:fs');
  const handle = await promises.open(s.path, constants.O_RDONLY | constants.O_NONBLOCK);
  if (!(await handle.stat()).isFile()) {
    await handle.close();
    throw new FormatError(`"${escapeControl(s.path)}" is not a regular file; nothing was read`);
  }
  return handle;
}

/** The bytes of a source, read here (in the worker); a path's to the size it carries at most (the size its caps were checked on). */
export async function sourceBytes(s: ByteSource): Promise<Uint8Array> {
  if (s instanceof Uint8Array) return s;
  if (typeof Blob !== 'undefined' && s instanceof Blob) return new Uint8Array(await s.arrayBuffer());
  const handle = await openPath(s as { path: string });
  try {
    const bytes = new Uint8Array(s.size);
    let at = 0;
    while (at < bytes.length) {
      const { bytesRead } = await handle.read(bytes, at, bytes.length - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return at === bytes.length ? bytes : bytes.slice(0, at);
  } finally {
    await handle.close();
  }
}

/**
 * Reads `f(readAt)` over ranges of a source, here (in the worker): a Blob's slices, a path's file
 * handle (closed after), the bytes' views. For a scan that must not hold the file whole.
 */
export async function withRanges<T>(s: ByteSource, f: (readAt: (offset: number, length: number) => Promise<Uint8Array>) => Promise<T>): Promise<T> {
  if (s instanceof Uint8Array) return f(async (o, n) => s.subarray(o, o + n));
  if (typeof Blob !== 'undefined' && s instanceof Blob) return f(async (o, n) => new Uint8Array(await s.slice(o, o + n).arrayBuffer()));
  const handle = await openPath(s as { path: string });
  try {
    return await f(async (o, n) => {
      const b = new Uint8Array(n);
      const { bytesRead } = await handle.read(b, 0, n, o);
      return b.subarray(0, bytesRead);
    });
  } finally {
    await handle.close();
  }
}

/** What the budgeted check of an ONNX graph found (onnxGraph): the graph's own counts, and its bytes when the caller asked to keep them. */
export interface OnnxGraphSummary {
  readonly nodes: number;
  readonly initializers: number;
  readonly inputs: number;
  readonly outputs: number;
  /** The file's bytes as the check read them (with `keep`), transferred back so the caller need not read the file again. */
  readonly bytes?: Uint8Array;
}

/** What an imported file turned out to be (importLog). */
export type ImportedLog = { readonly kind: 'runLog'; readonly log: RunLog; readonly charts?: RunLogCharts } | { readonly kind: 'generations'; readonly dump: GenerationDump };

/** How much of an imported file's head tells a generation dump from a run log: its first line, up to 1 MiB, with room for the line's end. */
export const SNIFF_BYTES = 2 ** 20 + 1024;

export interface InputJobs {
  /** An experiment file's bytes → savefile.ts parseExperimentFile's result. */
  experimentFile(bytes: Uint8Array): ParseResult<ExperimentData>;
  /** A checkpoint folder's config.json (as its one file, or none) → its model config, what else the page needs of it (hfLoad.ts readHfConfig) and its _name_or_path. */
  checkpointConfig(files: readonly (readonly [string, Uint8Array])[]): { readonly cfg: ModelConfig; readonly info: HfInfo; readonly name: string };
  /** A checkpoint folder's JSON files and the settings → the context its seat needs (config.json, the tokenizer and its chat template run on the task's prompts: hfSeatContext). */
  checkpointHead(input: { readonly files: readonly (readonly [string, Uint8Array])[]; readonly settings: HfContextSettings }): { readonly context: number };
  /** An ONNX folder's JSON files, the settings and the seat's mode → its context, vocabulary and config (onnxSeat.ts onnxSeatHead). */
  onnxHead(input: { readonly files: readonly (readonly [string, Uint8Array])[]; readonly settings: HfContextSettings; readonly mode: 'trainable' | 'frozen' }): OnnxSeatHead;
  /** An ONNX file (the graph) and the sizes of the folder's other files → its counts (and, with `keep`, its bytes), once read.ts's checks pass (caps — the main graph's counted from its field keys before the file is read whole —, operators, cycles, external data). */
  onnxGraph(input: { readonly graph: ByteSource; readonly file: string; readonly sizes: readonly (readonly [string, number])[]; readonly keep?: boolean }): OnnxGraphSummary;
  /**
   * An ONNX folder the CLI seats, as sized paths (src/cli/onnxSeat.ts readOnnxFolder: its JSON
   * files, the graph `file` and the graph's data files) → the seat's head and every file's bytes,
   * read here and transferred back, once each check passed: the tokenizer's size against
   * config.json's vocab_size before it is read, the head (as onnxHead), the graph (as onnxGraph).
   */
  onnxFolder(input: { readonly file: string; readonly files: readonly { readonly name: string; readonly source: ByteSource }[]; readonly settings: HfContextSettings; readonly mode: 'trainable' | 'frozen' }): { readonly head: OnnxSeatHead; readonly names: readonly string[]; readonly bytes: readonly Uint8Array[] };
  /** A real run's log file → the run it records (bridge/runLog.ts); refused by its size before it is read. */
  runLog(input: { readonly source: ByteSource; readonly name: string }): RunLog;
  /** A file picked on Import → the run log or the generation dump it is, told apart by its first line (bridge/generations.ts isGenerationDump on its first MiB, read here), then read as the runLog or generations job reads it; with `charts` (the page), a run log comes with what its charts draw (bridge/runLogCharts.ts). */
  importLog(input: { readonly source: ByteSource; readonly name: string; readonly charts?: boolean }): ImportedLog;
  /** A `?run=` link's value → the run it carries (bridge/runLogFile.ts readRunLogParam: inflated to a capped size, then read as a saved run) and what its charts draw. */
  runLink(param: string): OpenedRun;
  /** A real run's generation dump files (verl's rollout_data_dir / validation_data_dir, TeamTR's), each refused by its size before it is read → its episodes (bridge/generations.ts). */
  generations(files: readonly { readonly name: string; readonly source: ByteSource }[]): GenerationDump;
  /** A SAT-style recipe YAML and the open settings → the settings it sets (bridge/recipe.ts readRecipe). */
  recipe(input: { readonly text: string; readonly base: Config; readonly aMaxOfTask?: number }): Config;
}

export type JobName = keyof InputJobs;
export type JobInput<K extends JobName> = Parameters<InputJobs[K]>[0];
export type JobOutput<K extends JobName> = ReturnType<InputJobs[K]>;

/** What crosses back: the output, or a failure with the class name it had. */
export type JobReply<K extends JobName = JobName> = { readonly ok: true; readonly value: JobOutput<K> } | JobFailure;
export interface JobFailure {
  readonly ok: false;
  /** The SatError subclass ("FormatError", "ConfigError", …), or "" for an unexpected error. */
  readonly errorClass: string;
  readonly message: string;
  /** ConfigError's key. */
  readonly key?: string;
}

/** Each job, loading its checker on first use (header). */
export const INPUT_JOBS: { readonly [K in JobName]: (input: JobInput<K>) => Promise<JobOutput<K>> } = {
  experimentFile: async (bytes) => (await import('../app/savefile')).parseExperimentFile(bytes),
  checkpointConfig: async (files) => {
    const [{ readHfConfig }, { HF_SEAT_MAX_SEQ }] = await Promise.all([import('../model/hfLoad'), import('../sat/hfSeatLimits')]);
    const { cfg, info, raw } = readHfConfig(new Map(files), HF_SEAT_MAX_SEQ);
    const named = (raw as { _name_or_path?: unknown })._name_or_path;
    return { cfg, info, name: typeof named === 'string' ? named : '' };
  },
  checkpointHead: async ({ files, settings }) => {
    const [{ hfTokenizerOf, readHfConfig }, { HF_SEAT_MAX_SEQ, hfSeatContext }] = await Promise.all([import('../model/hfLoad'), import('../sat/hfSeatLimits')]);
    const map = new Map(files);
    const { cfg, info } = readHfConfig(map, HF_SEAT_MAX_SEQ);
    return { context: hfSeatContext(settings, hfTokenizerOf(map, cfg, info), info.maxPositions) };
  },
  onnxHead: async ({ files, settings, mode }) => (await import('../sat/onnxSeat')).onnxSeatHead(new Map(files), settings, mode),
  onnxGraph: async ({ graph, file, sizes, keep }) => {
    const { readOnnxGraph, scanOnnxCounts } = await import('../model/onnx/read');
    await withRanges(graph, (readAt) => scanOnnxCounts(readAt, sourceSize(graph), file));
    const known = new Map(sizes);
    const bytes = await sourceBytes(graph);
    const m = readOnnxGraph(bytes, file, (n) => known.get(n));
    return { nodes: m.nodes.length, initializers: m.initializers.size, inputs: m.inputs.length, outputs: m.outputs.length, ...(keep ? { bytes } : {}) };
  },
  onnxFolder: async ({ file, files, settings, mode }) => {
    const [{ declaredVocab }, { formatSize, MAX_SMALL_JSON_BYTES, maxTokenizerBytes }] = await Promise.all([import('../core/json'), import('../core/limits')]);
    const read = new Map<string, Uint8Array>();
    const config = files.find((f) => f.name === 'config.json');
    if (config !== undefined) read.set('config.json', await sourceBytes(config.source));
    const vocab = declaredVocab(read.get('config.json'));
    for (const { name, source } of files.filter((f) => f.name.endsWith('.json') && f.name !== 'config.json')) {
      const byVocab = name === 'tokenizer.json' && vocab !== undefined;
      const cap = byVocab ? maxTokenizerBytes(vocab) : MAX_SMALL_JSON_BYTES;
      if (sourceSize(source) > cap) throw new SatError('model', `--agent-model: "${escapeControl(name)}" in the ONNX folder is ${formatSize(sourceSize(source))}, more than the ${formatSize(cap)} this playground reads for it ${byVocab ? 'with the vocab_size of config.json' : 'as a JSON file'} (docs/models.md, "Input limits")`);
      read.set(name, await sourceBytes(source));
    }
    const head = await INPUT_JOBS.onnxHead({ files: [...read], settings, mode });
    const graph = files.find((f) => f.name === file);
    const data = files.filter((f) => f !== graph && !f.name.endsWith('.json'));
    if (graph !== undefined) {
      const checked = await INPUT_JOBS.onnxGraph({ graph: graph.source, file, sizes: data.map((f) => [f.name, sourceSize(f.source)] as const), keep: true });
      read.set(file, checked.bytes!);
    }
    for (const f of data) read.set(f.name, await sourceBytes(f.source));
    return { head, names: [...read.keys()], bytes: [...read.values()] };
  },
  runLog: async ({ source, name }) => {
    const [{ readRunLog }, { checkFileBytes, checkTextBytes, LOG_LIMITS }] = await Promise.all([import('../bridge/runLog'), import('../bridge/limits')]);
    checkFileBytes(sourceSize(source), LOG_LIMITS, 'run log');
    const bytes = await sourceBytes(source);
    checkTextBytes(bytes, LOG_LIMITS, 'run log'); // its characters counted on the bytes, before a string of them exists
    return readRunLog(new TextDecoder().decode(bytes), name);
  },
  importLog: async ({ source, name, charts }) => {
    const [{ isGenerationDump }, { checkFileBytes, LOG_LIMITS }] = await Promise.all([import('../bridge/generations'), import('../bridge/limits')]);
    checkFileBytes(sourceSize(source), LOG_LIMITS, 'run log');
    const head = await withRanges(source, (readAt) => readAt(0, Math.min(sourceSize(source), SNIFF_BYTES)));
    if (isGenerationDump(new TextDecoder().decode(head))) return { kind: 'generations', dump: await INPUT_JOBS.generations([{ name, source }]) };
    const log = await INPUT_JOBS.runLog({ source, name });
    return { kind: 'runLog', log, ...(charts ? { charts: (await import('../bridge/runLogCharts')).runLogCharts(log) } : {}) };
  },
  runLink: async (param) => {
    const [{ readRunLogParam }, { runLogCharts }] = await Promise.all([import('../bridge/runLogFile'), import('../bridge/runLogCharts')]);
    const log = readRunLogParam(param);
    return { log, charts: runLogCharts(log) };
  },
  generations: async (files) => {
    const [{ readGenerations }, { checkFileBytes, checkTextBytes, LOG_LIMITS }, { GENERATION_MAX }] = await Promise.all([import('../bridge/generations'), import('../bridge/limits'), import('../core/limits')]);
    for (const f of files) checkFileBytes(sourceSize(f.source), LOG_LIMITS, 'generation dump');
    const bytes = files.reduce((n, f) => n + sourceSize(f.source), 0);
    checkFileBytes(bytes, { ...LOG_LIMITS, chars: GENERATION_MAX.chars }, `import of ${files.length} generation dump files`);
    const texts: { name: string; text: string }[] = [];
    for (const f of files) {
      const b = await sourceBytes(f.source);
      checkTextBytes(b, LOG_LIMITS, 'generation dump'); // its characters counted on the bytes, before a string of them exists
      texts.push({ name: f.name, text: new TextDecoder().decode(b) });
    }
    return readGenerations(texts);
  },
  recipe: async ({ text, base, aMaxOfTask }) => (await import('../bridge/recipe')).readRecipe(text, base, { aMaxOfTask }),
};

/**
 * The buffers a reply can hand over instead of copying (a run log's columns, a graph's bytes): every
 * ArrayBuffer a typed array of the value owns whole, in the value and in its objects' fields and
 * arrays' items two levels down (a run log's columns, or those of the log an import found, and its charts' columns).
 * The worker ends after its one reply, so nothing it keeps is detached under it.
 */
export function replyTransfer(reply: JobReply): ArrayBuffer[] {
  if (!reply.ok) return [];
  const out = new Set<ArrayBuffer>();
  const take = (x: unknown, depth: number): void => {
    if (ArrayBuffer.isView(x)) {
      if (x.buffer instanceof ArrayBuffer && x.byteOffset === 0 && x.byteLength === x.buffer.byteLength) out.add(x.buffer);
    } else if (depth < 3 && x !== null && typeof x === 'object') {
      for (const f of Array.isArray(x) ? x : Object.values(x)) take(f, depth + 1);
    }
  };
  take(reply.value, 0);
  return [...out];
}

/** Runs job `name` on `input` and packs the outcome for the way back (never rejects). */
export async function runJob<K extends JobName>(name: K, input: JobInput<K>): Promise<JobReply<K>> {
  try {
    const job = INPUT_JOBS[name] as (x: JobInput<K>) => Promise<JobOutput<K>>;
    return { ok: true, value: await job(input) };
  } catch (e) {
    if (e instanceof SatError) return { ok: false, errorClass: e.name, message: e.message, key: (e as { key?: string }).key };
    return { ok: false, errorClass: '', message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}
