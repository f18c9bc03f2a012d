/**
 * A Hugging Face checkpoint folder in the page (docs/models.md, "Your own checkpoint"): the files
 * a folder picker or a drop gives, checked against memory before any weight is read, turned into
 * the name → bytes map src/model/hfLoad.ts takes, and stored raw (by folder hash, in IndexedDB) so
 * a reload re-runs the same load and seats the same seat bit for bit. The loader is imported on
 * first use, keeping it out of the page's main chunk.
 *
 * Not here: the load itself (src/model/hfLoad.ts, in the seat's worker), the picker
 * (components/CheckpointPicker.tsx), the team (session.ts, src/workers/remoteTeam.ts).
 */
import { ConfigError, FormatError } from '../core/errors';
import { formatSize, MAX_SMALL_JSON_BYTES } from '../core/limits';
import { checkFits, checkpointParams, describeEstimate, estimateMemory, formatBytes, type MemoryEstimate } from '../model/hfConfig';
import type { HfFiles } from '../model/hfLoad';
import { SEAT_QUANTS, type QuantKind } from '../model/quant';
import type { Config } from '../sat/config';
import { HF_SEAT_MAX_SEQ, hfSeatBudget, type HfContextSettings } from '../sat/hfSeatLimits';
import { checkInput } from './inputCheck';
import { browserStore, guarded, type Guarded, type PartStore } from './persist';
import type { SeatCheckpoint } from '../workers/remoteTeam';
import { seatOnnx } from './onnxSeatRef';
import { ONNX_KEPT, onnxSeatContext, onnxSeatEstimate, readOnnxSeatFolder, type OnnxSeatMode } from './onnxFiles';

/** What the page needs of a File (a Blob with a name; a folder picker adds webkitRelativePath). */
export interface FileLike {
  readonly name: string;
  readonly size: number;
  readonly webkitRelativePath?: string;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** The quantization a seated checkpoint is loaded with in the page unless the card says otherwise (as the CLI's default). */
export const PAGE_SEAT_QUANT: QuantKind = 'q8';

/** The card's choices, in its order: Q8 and Q4 blocks, or f32 as stored (for small checkpoints: the estimate refuses big ones). */
export { SEAT_QUANTS };

/** `q` when it is a quantization a seat may use (a stored seating or a link names one), else undefined. */
export function seatQuant(q: unknown): QuantKind | undefined {
  return SEAT_QUANTS.find((x) => x === q);
}

/** Characters of the folder hash shown after the folder's name. */
export const SHORT_HASH = 8;

const KEPT = /^[^/]+\.(json|safetensors)$/;

/**
 * The folder's files by their name in it (webkitRelativePath minus the top folder, or the file's
 * name), and the folder's name ("" for files dropped on their own). Like the CLI, only the
 * folder's own *.json and *.safetensors files are kept, so both hash a folder alike.
 */
export function folderEntries(list: readonly FileLike[]): { folder: string; entries: Map<string, FileLike> } {
  if (list.length === 0) throw new FormatError('checkpoint folder: no files were given; pick the folder holding config.json, model.safetensors and tokenizer.json');
  let folder = '';
  const entries = new Map<string, FileLike>();
  for (const f of list) {
    const rel = f.webkitRelativePath ?? '';
    const cut = rel.indexOf('/');
    const name = cut >= 0 ? rel.slice(cut + 1) : f.name;
    if (cut >= 0) {
      const top = rel.slice(0, cut);
      if (folder !== '' && top !== folder) throw new FormatError(`checkpoint folder: the files come from two folders, "${folder}" and "${top}"; pick one checkpoint folder`);
      folder = top;
    }
    if (!KEPT.test(name) && !ONNX_KEPT.test(name)) continue; // README.md, .gitattributes, sub-folders: not read, as in the CLI
    if (entries.has(name)) throw new FormatError(`checkpoint folder: two files are named "${name}"`);
    entries.set(name, f);
  }
  // A checkpoint keeps its own *.json and *.safetensors only (its onnx/ variants are not read, as in
  // the CLI); a folder without safetensors but with .onnx files is an ONNX model folder (onnxFiles.ts).
  const checkpoint = [...entries.keys()].some((n) => n.endsWith('.safetensors'));
  for (const n of [...entries.keys()]) if (checkpoint ? !KEPT.test(n) : !ONNX_KEPT.test(n)) entries.delete(n);
  if (entries.size === 0) {
    throw new FormatError(`checkpoint folder: none of the ${list.length} file${list.length === 1 ? '' : 's'} given is a .json or .safetensors file of the folder itself, or an .onnx file of it or of its onnx/ folder (drop one folder, or its files, or pick the folder)`);
  }
  return { folder, entries };
}

/** The memory a seat may take in this page, and what that limit is, in words. */
export function pageSeatLimit(): { bytes: number; where: string } {
  // navigator.deviceMemory (Chromium; GiB, rounded and capped at 8) — half of it for one seat. A
  // worker's ArrayBuffers live outside its JS heap, so the heap limit is not the bound.
  const gib = (globalThis as { navigator?: { deviceMemory?: number } }).navigator?.deviceMemory;
  if (typeof gib === 'number' && gib > 0) return { bytes: Math.floor((gib / 2) * 2 ** 30), where: `this page (half of the ${gib} GiB the browser reports, navigator.deviceMemory)` };
  return { bytes: 2 * 2 ** 30, where: 'this page (2 GiB: the browser does not report its memory)' };
}

/** The loader module, loaded on first use (it brings the tokenizer library). */
const loader = () => import('../model/hfLoad');

export { checkpointParams };

/** What a seat's context and memory estimate depend on. */
export type SeatSettings = Pick<Config, 'lora' | 'batch' | 'group' | 'evalEpisodes'> & HfContextSettings;

/**
 * The context (positions) the settings need of a seat on these files (config.json and the
 * tokenizer's files; the weights are not read). The tokenizer is built and run in a budgeted worker
 * (inputCheck.ts), as for a folder just picked: the page's main thread never builds one to measure.
 */
export async function seatContext(files: HfFiles, cfg: HfContextSettings, onnx?: SeatCheckpoint['onnx']): Promise<number> {
  if (onnx) return onnxSeatContext(files, cfg as SeatSettings, onnx.mode);
  const json = [...files].filter(([name]) => name.endsWith('.json'));
  return (await checkInput('checkpointHead', { files: json, settings: contextSettings(cfg) }, 'checkpoint')).context;
}

/** The settings a seat's context depends on, alone (what crosses to the check's worker). */
export function contextSettings(cfg: HfContextSettings): HfContextSettings {
  const { task, taskSeed, level, formatReward, protocol, agents, maxNew } = cfg;
  return { task, taskSeed, level, formatReward, protocol, agents, maxNew };
}

/** A folder read and checked, ready to seat. */
export interface ReadCheckpoint extends SeatCheckpoint {
  /** The context its seat gets for these settings (seatContext). */
  readonly context: number;
  readonly estimate: MemoryEstimate;
  /** checkpointParams of its config. */
  readonly params: number;
  /** Bytes of its files. */
  readonly bytes: number;
}

/** "folder@1a2b3c4d" (or the config's name when the files came without a folder). */
export function seatName(folder: string, hash: string, configName: string): string {
  const base = (folder || configName.split('/').pop() || 'checkpoint').slice(0, 48);
  return `${base}@${hash.slice(0, SHORT_HASH)}`;
}

/** Refuses file `name` by its size (a File says it before a byte is read) when it is over `cap`. */
function checkSize(name: string, f: FileLike, cap: number): void {
  if (f.size > cap) throw new FormatError(`checkpoint folder: "${name}" is ${formatSize(f.size)}, more than the ${formatSize(cap)} this page reads for it with this config.json (docs/models.md, "Input limits")`);
}

async function bytesOf(name: string, f: FileLike, cap: number): Promise<Uint8Array> {
  checkSize(name, f, cap);
  return new Uint8Array(await f.arrayBuffer());
}

/**
 * Reads a checkpoint folder for settings `cfg`, to be stored as `quant`: config.json first (its
 * own checks, hfConfig.ts), then the tokenizer's JSON files and the context the preset needs with
 * them (a ConfigError naming it and the limit when the checkpoint is shorter), the memory estimate
 * for that context against `limit` (a ConfigError naming every part when it does not fit — before
 * any weight is read), then every file, and the folder hash. `onRead(done, total)` after each file.
 * An ONNX model folder is read by onnxFiles.ts in `onnxMode`, its graph `onnxFile` (default: the
 * first of onnxFolderFiles).
 */
export async function readCheckpointFolder(
  list: readonly FileLike[],
  cfg: SeatSettings,
  limit: { bytes: number; where: string },
  onRead?: (done: number, total: number) => void,
  quant: QuantKind = PAGE_SEAT_QUANT,
  onnxMode: OnnxSeatMode = 'trainable',
  onnxFile?: string,
): Promise<ReadCheckpoint> {
  const { folder, entries } = folderEntries(list);
  if (![...entries.keys()].some((n) => n.endsWith('.safetensors')) && [...entries.keys()].some((n) => n.endsWith('.onnx'))) {
    return readOnnxSeatFolder(folder, entries, cfg, limit, quant, onnxMode, onRead, onnxFile);
  }
  const { hfFolderHash, hfFileCap, hfWeightsCap } = await loader();
  const configFile = entries.get('config.json');
  const head = new Map<string, Uint8Array>(configFile ? [['config.json', await bytesOf('config.json', configFile, MAX_SMALL_JSON_BYTES)]] : []);
  const what = `checkpoint folder${folder ? ` "${folder}"` : ''}`;
  // config.json is parsed in a budgeted worker too (inputCheck.ts), so a 4 MiB one is no pause
  // here; "config.json is missing" comes from there as well.
  const { cfg: mc, info, name: configName } = await checkInput('checkpointConfig', [...head], what);
  // Every size against what the config implies, before another byte is read.
  const weights = [...entries].filter(([name]) => name.endsWith('.safetensors'));
  for (const [name, f] of entries) checkSize(name, f, hfFileCap(name, mc, info));
  const weightsCap = hfWeightsCap(mc, info, weights.length);
  const weightBytes = weights.reduce((n, [, f]) => n + f.size, 0);
  if (weightBytes > weightsCap) throw new FormatError(`checkpoint folder: its safetensors files hold ${formatSize(weightBytes)}, more than the ${formatSize(weightsCap)} its config.json has room for`);
  for (const [name, f] of entries) if (name !== 'config.json' && name.endsWith('.json')) head.set(name, await bytesOf(name, f, hfFileCap(name, mc, info))); // the tokenizer's (and the index: all small)
  // The tokenizer and its chat template are first parsed and run in a budgeted worker (inputCheck.ts).
  const { context } = await checkInput('checkpointHead', { files: [...head], settings: contextSettings(cfg) }, what);
  const estimate = estimateMemory(mc, { quant, ...hfSeatBudget(cfg, context) });
  checkFits(estimate, limit.bytes, limit.where);
  const files = new Map<string, Uint8Array>();
  const names = [...entries.keys()].sort();
  let bytes = 0;
  for (const [i, name] of names.entries()) {
    const b = head.get(name) ?? (await bytesOf(name, entries.get(name)!, hfFileCap(name, mc, info)));
    files.set(name, b);
    bytes += b.byteLength;
    onRead?.(i + 1, names.length);
  }
  const hash = await hfFolderHash(files);
  return { name: seatName(folder, hash, configName), hash, files, quant, context, estimate, bytes, params: checkpointParams(mc, info) };
}

/** A folder's config.json as the budgeted worker reads it (checkpointConfig), once per files map: the card asks for three estimates. */
const configs = new WeakMap<HfFiles, ReturnType<typeof checkInput<'checkpointConfig'>>>();
function configOf(files: HfFiles): ReturnType<typeof checkInput<'checkpointConfig'>> {
  let c = configs.get(files);
  if (!c) {
    const bytes = files.get('config.json');
    c = checkInput('checkpointConfig', bytes ? [['config.json', bytes]] : [], 'checkpoint');
    configs.set(files, c);
    c.catch(() => configs.delete(files)); // a refusal is not kept: the next call checks again
  }
  return c;
}

/** The memory estimate for a folder already read (a stored one), for settings `cfg` (at the context they need), stored as `quant`. */
export async function estimateOf(files: HfFiles, cfg: SeatSettings, quant: QuantKind = PAGE_SEAT_QUANT, known?: number, onnx?: SeatCheckpoint['onnx']): Promise<MemoryEstimate> {
  if (onnx) return onnxSeatEstimate(files, onnx.file, cfg, quant, onnx.mode);
  const context = known ?? (await seatContext(files, cfg)); // `known`: seatContext of these files and settings, measured already
  const { cfg: mc, info } = await configOf(files);
  return estimateMemory({ ...mc, maxSeq: Math.min(info.maxPositions, context) }, { quant, ...hfSeatBudget(cfg, context) });
}

/** The estimate as the card shows it. */
export function describeSeatEstimate(e: MemoryEstimate): string {
  return `memory estimate ${formatBytes(e.total)} (${describeEstimate(e)})`;
}

// ── storage ───────────────────────────────────────────────────────────────────────────────────

/** Which seat holds which checkpoint, stored how (what a reload, and a share link, need to seat it again). */
export interface SeatRef {
  readonly agent: number;
  readonly name: string;
  readonly hash: string;
  /** Absent in seatings and links written before the card had a choice: q8 (PAGE_SEAT_QUANT). */
  readonly quant?: QuantKind;
  /** An ONNX model folder's seat: which .onnx file, trainable or frozen (absent: a checkpoint). */
  readonly onnx?: SeatCheckpoint['onnx'];
}



export const CHECKPOINT_DB = 'sat-playground-checkpoints';
const SEATING_KEY = 'seating';
const fileKey = (hash: string): string => `checkpoint:${hash}`;

/** A stored checkpoint: its name and raw files. */
interface StoredCheckpoint {
  readonly name: string;
  readonly files: readonly (readonly [string, Uint8Array])[];
}

function isHash(h: unknown): h is string {
  return typeof h === 'string' && /^[0-9a-f]{64}$/.test(h);
}

/** The raw files of seated checkpoints by folder hash, and the page's seating, in a PartStore. */
export class CheckpointStore {
  constructor(private readonly store: PartStore) {}

  /** The page's: IndexedDB through idb-keyval (persist.ts). */
  static browser(): CheckpointStore {
    return new CheckpointStore(browserStore(CHECKPOINT_DB, 'files'));
  }

  /** Keeps a checkpoint's files under its hash; the value is the bytes stored. */
  save(c: Omit<SeatCheckpoint, 'quant'>): Promise<Guarded<number>> {
    return guarded('keep the checkpoint in this browser', async () => {
      const files = [...c.files].map(([k, v]) => [k, v] as const);
      await this.store.setMany([[fileKey(c.hash), { name: c.name, files } satisfies StoredCheckpoint]]);
      return files.reduce((n, [, v]) => n + v.byteLength, 0);
    });
  }

  /** The checkpoint stored under `hash` (null when there is none); its files are re-hashed, so a damaged copy is refused. */
  load(hash: string): Promise<Guarded<(Omit<SeatCheckpoint, 'quant'> & { bytes: number; params: number }) | null>> {
    return guarded('read the stored checkpoint', async () => {
      const v = (await this.store.get(fileKey(hash))) as Partial<StoredCheckpoint> | undefined;
      if (v === undefined) return null;
      if (typeof v.name !== 'string' || !Array.isArray(v.files) || !v.files.every((e) => Array.isArray(e) && typeof e[0] === 'string' && e[1] instanceof Uint8Array)) {
        throw new FormatError(`the stored checkpoint ${hash.slice(0, SHORT_HASH)} is not in a form this page reads`);
      }
      const files = new Map(v.files.map(([k, b]) => [k, b] as const));
      const { hfFolderHash, readHfConfig } = await loader();
      if ((await hfFolderHash(files)) !== hash) throw new FormatError(`the stored checkpoint ${v.name} no longer matches its hash (the browser's copy is damaged); pick its folder again`);
      const bytes = v.files.reduce((n, [, b]) => n + b.byteLength, 0);
      // An ONNX folder's config.json may be any architecture's (a frozen seat's): no parameter count then.
      if ([...files.keys()].some((n) => n.endsWith('.onnx'))) {
        try {
          const { cfg, info } = readHfConfig(files, HF_SEAT_MAX_SEQ);
          return { name: v.name, hash, files, bytes, params: checkpointParams(cfg, info) };
        } catch {
          return { name: v.name, hash, files, bytes, params: 0 };
        }
      }
      const { cfg, info } = await configOf(files);
      return { name: v.name, hash, files, bytes, params: checkpointParams(cfg, info) };
    });
  }

  /**
   * Records the seating, and deletes the stored checkpoints `drop` names (a seat's previous one)
   * unless a seat still holds them. Nothing else is deleted: a link that seats other checkpoints
   * leaves the ones this browser keeps in place.
   */
  saveSeating(seats: readonly SeatRef[], drop: readonly string[] = []): Promise<Guarded<void>> {
    return guarded('remember the seated checkpoints', async () => {
      const keep = new Set(seats.map((s) => s.hash));
      const stale = new Set([...new Set(drop)].filter((h) => !keep.has(h)).map(fileKey));
      // One transaction: the seating and the deletions land together.
      await this.store.setMany(
        [[SEATING_KEY, seats.map((s) => ({ agent: s.agent, name: s.name, hash: s.hash, quant: s.quant ?? PAGE_SEAT_QUANT, ...(s.onnx ? { onnx: s.onnx } : {}) }))]],
        stale.size > 0 ? (key) => stale.has(key) : undefined,
      );
    });
  }

  /** The seating last recorded ([] when none). */
  loadSeating(): Promise<Guarded<SeatRef[]>> {
    return guarded('read the seated checkpoints', async () => {
      const v = await this.store.get(SEATING_KEY);
      if (v === undefined) return [];
      if (!Array.isArray(v) || !v.every((s) => Number.isInteger(s?.agent) && typeof s?.name === 'string' && isHash(s?.hash) && (s.quant === undefined || seatQuant(s.quant) !== undefined) && (s.onnx === undefined || seatOnnx(s.onnx) !== undefined))) {
        throw new ConfigError('seating', v, 'the stored seating of checkpoints is not in a form this page reads');
      }
      return (v as SeatRef[]).map((s) => ({ agent: s.agent, name: s.name, hash: s.hash, quant: s.quant ?? PAGE_SEAT_QUANT, ...(s.onnx ? { onnx: seatOnnx(s.onnx) } : {}) }));
    });
  }
}
