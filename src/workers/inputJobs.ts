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
import type { ByteRanges } from '../model/safetensors';
import type { OnnxSeatHead } from '../sat/onnxSeat';

/**
 * A file on disk as the CLI checked it (src/cli/folderFiles.ts checkedFile): its real path, its
 * size, and its identity (device and inode numbers), so the worker that reads it can tell that
 * the file it opened is the one that was checked.
 */
export interface CheckedPath {
  readonly path: string;
  readonly size: number;
  readonly dev: number;
  readonly ino: number;
}

/** A file's bytes as a job gets them (header): a path carries its size, so the budget knows it before the worker starts. */
export type ByteSource = Uint8Array | Blob | CheckedPath;

/** The size of a source, without reading it. */
export function sourceSize(s: ByteSource): number {
  return s instanceof Uint8Array ? s.byteLength : s.size;
}

/**
 * A checked path opened for reading (node:fs, imported only then — never in the page): without
 * blocking (a named pipe put in its place cannot stall the thread) and without following a link
 * in its last step (its path is a real path: a link there was put in after the check); then the
 * open handle must be the file checked — a regular file, the same device and inode, at least the
 * size checked (a log a running trainer still writes may have grown; it is read to the size
 * checked). Anything else is refused by name, nothing read.
 */
async function openPath(s: CheckedPath): Promise<import('node:fs/promises').FileHandle> {
  const fs = 'node:fs';
  const { promises, constants } = (await import(/* @vite-ignore */ fs)) as typeof import('node:fs');
  const name = `"${escapeControl(s.path)}"`;
  const swapped = `${name} is no longer the file that was checked (another file or a link was put in its place after the check); nothing was read`;
  const handle = await promises.open(s.path, constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0)).catch((e: NodeJS.ErrnoException) => {
    throw new FormatError(e.code === 'ELOOP' || e.code === 'EMLINK' ? swapped : `${name} cannot be opened (${e.code ?? e.message}); nothing was read`);
  });
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new FormatError(`${name} is not a regular file; nothing was read`);
    if (st.dev !== s.dev || st.ino !== s.ino) throw new FormatError(swapped);
    if (st.size < s.size) throw new FormatError(`${name} is ${st.size.toLocaleString('en')} bytes, fewer than the ${s.size.toLocaleString('en')} it had when it was checked (it was truncated since); nothing was read`);
    return handle;
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** Reads bytes [at, at + bytes.length) of an open handle into `bytes`; returns how many were read (fewer at the file's end). */
async function readFully(handle: import('node:fs/promises').FileHandle, bytes: Uint8Array, at: number): Promise<number> {
  let n = 0;
  while (n < bytes.length) {
    const { bytesRead } = await handle.read(bytes, n, bytes.length - n, at + n);
    if (bytesRead === 0) break;
    n += bytesRead;
  }
  return n;
}

/** The bytes of a source, read here (in the worker); a path's to the size it carries at most (the size its caps were checked on). */
export async function sourceBytes(s: ByteSource): Promise<Uint8Array> {
  if (s instanceof Uint8Array) return s;
  if (typeof Blob !== 'undefined' && s instanceof Blob) return new Uint8Array(await s.arrayBuffer());
  const handle = await openPath(s as CheckedPath);
  try {
    const bytes = new Uint8Array(s.size);
    const n = await readFully(handle, bytes, 0);
    return n === bytes.length ? bytes : bytes.slice(0, n);
  } finally {
    await handle.close();
  }
}

/** A source opened for reads by range: bytes [begin, end), never past the size it had when checked. */
interface OpenSource {
  /** Bytes [begin, end); a path's into `into` when it is large enough (a range session's one buffer), else into a new one. */
  read(begin: number, end: number, into?: ArrayBuffer): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** Opens a source for reads by range, here (in the worker): a Blob's slices, a path's file handle (openPath's checks), the bytes' views. */
async function openSource(s: ByteSource): Promise<OpenSource> {
  if (s instanceof Uint8Array) return { read: async (o, e) => s.slice(o, e), close: async () => {} }; // a copy: a range session hands each read over
  if (typeof Blob !== 'undefined' && s instanceof Blob) return { read: async (o, e) => new Uint8Array(await s.slice(o, e).arrayBuffer()), close: async () => {} };
  const p = s as CheckedPath;
  const handle = await openPath(p);
  return {
    read: async (o, e, into) => {
      const n0 = Math.max(0, Math.min(e, p.size) - o);
      const b = into !== undefined && into.byteLength >= n0 ? new Uint8Array(into, 0, n0) : new Uint8Array(n0);
      const n = await readFully(handle, b, o);
      return n === b.length ? b : b.subarray(0, n);
    },
    close: () => handle.close(),
  };
}

/**
 * Reads `f(readAt)` over ranges of a source, here (in the worker): a Blob's slices, a path's file
 * handle (closed after), the bytes' views. For a scan that must not hold the file whole.
 */
export async function withRanges<T>(s: ByteSource, f: (readAt: (offset: number, length: number) => Promise<Uint8Array>) => Promise<T>): Promise<T> {
  const src = await openSource(s);
  try {
    return await f((o, n) => src.read(o, o + n));
  } finally {
    await src.close();
  }
}

/**
 * A range session's messages (the CLI's checkpoint weights, src/cli/inputCheck.ts cliRanges): one
 * `open` of the files, then `read`s of byte ranges of them, answered in order, then `close`. A read
 * may hand back the buffer of the read before (`buffer`, transferred): the range is read into it
 * when it is large enough, so a session passes one buffer to and fro instead of allocating one a read.
 */
export type RangeRequest =
  | { readonly open: readonly ByteSource[] }
  | { readonly read: readonly [file: number, begin: number, end: number]; readonly buffer?: ArrayBuffer }
  | { readonly close: true };

/** A range session's answer: the files' sizes (open), a range's bytes (read), nothing (close); or a failure. */
export type RangeReply = { readonly ok: true; readonly value: readonly number[] | Uint8Array | null } | JobFailure;

/**
 * The worker's side of a range session: each request answered here, in the worker — the files
 * opened with their checks (openPath) and held open, each range read from its handle (into the
 * buffer the request hands back, when it has one). One request at a time (the caller waits for
 * each answer), so at most one range's bytes exist here at once. A read's bytes are posted back
 * with their whole buffer transferred (rangeTransfer).
 */
export function rangeServer(): (m: RangeRequest) => Promise<RangeReply> {
  const files: OpenSource[] = [];
  const closeAll = async (): Promise<void> => {
    for (const f of files.splice(0)) await f.close();
  };
  return async (m) => {
    try {
      if ('open' in m) {
        try {
          for (const s of m.open) files.push(await openSource(s));
        } catch (e) {
          await closeAll();
          throw e;
        }
        return { ok: true, value: m.open.map(sourceSize) };
      }
      if ('read' in m) {
        const [i, begin, end] = m.read;
        const f = files[i];
        if (f === undefined) throw new Error(`no file ${i} is open`);
        return { ok: true, value: await f.read(begin, end, m.buffer) };
      }
      await closeAll();
      return { ok: true, value: null };
    } catch (e) {
      return failure(e);
    }
  };
}

/** The buffer a range session's answer hands over: a read's whole buffer (read for it, or handed back for it), never copied. */
export function rangeTransfer(reply: RangeReply): ArrayBuffer[] {
  return reply.ok && reply.value instanceof Uint8Array && reply.value.buffer instanceof ArrayBuffer ? [reply.value.buffer] : [];
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
  /**
   * A checkpoint folder the CLI seats, as checked paths (src/cli/hfSeat.ts openHfFolder: each a
   * regular file inside the folder, config.json within its cap) → its JSON files' bytes, read here
   * and transferred back, once every check passed: config.json read (hfLoad.ts readHfConfig), each
   * other file's size against the cap that config sets (hfFileCap) and the weights' together, and
   * every safetensors header read by range and checked against the config (readShardHeaders).
   * With the seat's settings, also the context it needs (as checkpointHead), so a seat starts one
   * worker for its folder's head. The weights themselves are read later, by range, in a range
   * session (budget.ts budgetedRanges).
   */
  checkpointFolder(input: { readonly files: readonly { readonly name: string; readonly source: ByteSource }[]; readonly settings?: HfContextSettings }): { readonly names: readonly string[]; readonly bytes: readonly Uint8Array[]; readonly context?: number };
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
  checkpointFolder: async ({ files, settings }) => {
    const [{ hfFileCap, hfWeightsCap, readHfConfig, readShardHeaders }, { formatSize }] = await Promise.all([import('../model/hfLoad'), import('../core/limits')]);
    const json = new Map<string, Uint8Array>();
    const config = files.find((f) => f.name === 'config.json');
    if (config !== undefined) json.set('config.json', await sourceBytes(config.source));
    const { cfg, info } = readHfConfig(json); // "config.json is missing" and the config's own refusals come from here
    const weights = files.filter((f) => f.name.endsWith('.safetensors'));
    const weightsCap = hfWeightsCap(cfg, info, weights.length);
    let total = 0;
    for (const { name, source } of files) {
      const cap = hfFileCap(name, cfg, info);
      const size = sourceSize(source);
      if (name !== 'config.json' && size > cap) throw new SatError('model', `--agent-model: "${escapeControl(name)}" in the checkpoint folder is ${formatSize(size)}, more than the ${formatSize(cap)} this playground reads for it with this config.json (docs/models.md, "Input limits")`);
      if (name.endsWith('.safetensors') && (total += size) > weightsCap) throw new SatError('model', `--agent-model: the checkpoint folder's safetensors files hold more than the ${formatSize(weightsCap)} its config.json has room for`);
    }
    for (const { name, source } of files) if (name.endsWith('.json') && name !== 'config.json') json.set(name, await sourceBytes(source));
    const opened: OpenSource[] = [];
    try {
      const ranges = new Map<string, ByteRanges>();
      for (const { name, source } of weights) {
        const src = await openSource(source);
        opened.push(src);
        ranges.set(name, { byteLength: sourceSize(source), read: (b, e) => src.read(b, e) });
      }
      await readShardHeaders(new Map<string, Uint8Array | ByteRanges>([...json, ...ranges]), cfg, info);
    } finally {
      for (const src of opened) await src.close();
    }
    const context = settings === undefined ? undefined : (await INPUT_JOBS.checkpointHead({ files: [...json], settings })).context;
    return { names: [...json.keys()], bytes: [...json.values()], ...(context === undefined ? {} : { context }) };
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
    return failure(e);
  }
}

/** A job's or a range session's failure, packed for the way back: a SatError with its class, anything else as a bug. */
function failure(e: unknown): JobFailure {
  if (e instanceof SatError) return { ok: false, errorClass: e.name, message: e.message, key: (e as { key?: string }).key };
  return { ok: false, errorClass: '', message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
}
