/**
 * An ONNX model folder in the page (docs/models.md, "An ONNX model folder"): the counterpart of
 * hfFiles.ts's checkpoint reading for the transformers.js / onnx-community layout, which
 * hfFiles.ts hands over to when a picked folder has .onnx files and no safetensors checkpoint.
 *
 *   onnxFolderFiles(names)       the .onnx files a seat can take (onnx/model.onnx first, as the CLI);
 *                                onnxFolderFile the default of them
 *   readOnnxSeatFolder(…, file)  with `file` the one chosen (a record's, or the card's) instead
 *   readOnnxSeatFolder(…)        the JSON files first, the context the preset needs with the
 *                                folder's tokenizer, the memory estimate against the limit — before
 *                                the graph is read —, the graph checked in the budgeted worker
 *                                (inputJobs.ts onnxGraph, which hands back the bytes it read), then
 *                                the chosen graph's data files only (a folder often holds several
 *                                variants), and the hash of what was read
 *   onnxSeatEstimate(…)          that estimate for files already read (a stored seat)
 * A trainable seat's estimate is a checkpoint's for its config.json (untied: an ONNX head is its
 * own weight) plus the f32 copy the parity check holds; a frozen seat's is the files, onnxruntime's
 * copy of them, one sequence's cache and one forward's logits (src/model/onnx/folder.ts).
 *
 * Not here: the seat itself (src/sat/onnxSeat.ts, in the seat's worker), storage (hfFiles.ts).
 */
import { FormatError } from '../core/errors';
import { declaredVocab, readJson } from '../core/json';
import { formatSize, MAX_JSON_DEPTH, MAX_SMALL_JSON_BYTES, maxTokenizerBytes } from '../core/limits';
import { checkFits, estimateMemory, type MemoryEstimate } from '../model/hfConfig';
import type { HfFiles } from '../model/hfLoad';
import type { QuantKind } from '../model/quant';
import { hfSeatBudget, HF_SEAT_MAX_SEQ } from '../sat/hfSeatLimits';
import type { OnnxSeatHead } from '../sat/onnxSeat';
// hfFiles.ts imports this module too; the two use each other's functions only when called.
import { checkpointParams, contextSettings, seatName, type FileLike, type ReadCheckpoint, type SeatSettings } from './hfFiles';
import { checkInput } from './inputCheck';

export type OnnxSeatMode = 'trainable' | 'frozen';
export const ONNX_SEAT_MODES: readonly OnnxSeatMode[] = ['trainable', 'frozen'];

/** A name an ONNX folder keeps: a top-level JSON file, or a graph / external data file in it or in onnx/. */
export const ONNX_KEPT = /^(?:[^/]+\.json|(?:onnx\/)?[^/]+\.onnx(?:_data(?:_\d+)?|\.data)?)$/;

/** The .onnx files a seat can take from these names, in the order offered: onnx/model.onnx first, then sorted (as the CLI). */
export function onnxFolderFiles(names: Iterable<string>): string[] {
  const list = [...names].filter((n) => n.endsWith('.onnx'));
  const rank = (n: string): number => (n.startsWith('onnx/') ? 0 : 2) + (/(^|\/)model\.onnx$/.test(n) ? 0 : 1);
  return list.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** The .onnx file a seat takes when none is chosen: the first of onnxFolderFiles. */
export function onnxFolderFile(names: Iterable<string>): string | undefined {
  return onnxFolderFiles(names)[0];
}

/** The chosen file and the data files beside it whose names start with its name. */
function filesOfSeat(names: Iterable<string>, file: string): string[] {
  return [...names].filter((n) => n.endsWith('.json') ? !n.includes('/') : n === file || (n.startsWith(file) && !n.endsWith('.onnx')));
}

const loaders = () => Promise.all([import('../model/hfLoad'), import('../model/onnx/folder')]);

/** The seat's head for `cfg` (its context, vocabulary, config), worked out in a budgeted worker: the tokenizer and template are the folder's own. */
function headOf(files: HfFiles, cfg: SeatSettings, mode: OnnxSeatMode): Promise<OnnxSeatHead> {
  return checkInput('onnxHead', { files: [...files].filter(([n]) => n.endsWith('.json')), settings: contextSettings(cfg), mode }, 'ONNX folder');
}

/** A JSON file's bytes, refused by name before they are read when it is larger than `cap`. */
async function jsonBytes(name: string, f: FileLike, cap: number): Promise<Uint8Array> {
  if (f.size > cap) throw new FormatError(`ONNX folder: "${name}" is ${formatSize(f.size)}, more than the ${formatSize(cap)} this page reads for it (docs/models.md, "Input limits")`);
  return new Uint8Array(await f.arrayBuffer());
}

/** The estimate (header) for a seat on `files` (JSON files at least) whose graph and data take `graphBytes`. */
async function estimate(files: HfFiles, cfg: SeatSettings, quant: QuantKind, mode: OnnxSeatMode, graphBytes: number): Promise<{ estimate: MemoryEstimate; context: number }> {
  const c = await headOf(files, cfg, mode);
  if (mode === 'trainable') {
    const e = estimateMemory(c.mc!, { quant, ...hfSeatBudget(cfg, c.context) });
    const exact = quant === 'f32' ? 0 : estimateMemory(c.mc!, { quant: 'f32', loraRank: 0, sequences: 1, seqLen: 1, prompts: 1 }).weights;
    return { estimate: { ...e, hostWeights: e.hostWeights + exact, total: e.total + exact }, context: c.context };
  }
  const { estimateOnnxFrozenFromConfig } = (await loaders())[1];
  const f = estimateOnnxFrozenFromConfig(c.config, graphBytes, c.vocab, c.context);
  // In the card's terms: the weights as onnxruntime holds them, the files as the worker keeps them, the cache and logits as sampling.
  return { estimate: { weights: f.session, hostWeights: f.files, lora: 0, activations: f.logits, sampling: f.cache, total: f.total }, context: c.context };
}

/** The estimate for a seat on files already read (a stored one). */
export async function onnxSeatEstimate(files: HfFiles, file: string, cfg: SeatSettings, quant: QuantKind, mode: OnnxSeatMode): Promise<MemoryEstimate> {
  let bytes = 0;
  for (const n of filesOfSeat(files.keys(), file)) if (!n.endsWith('.json')) bytes += files.get(n)!.byteLength;
  return (await estimate(files, cfg, quant, mode, bytes)).estimate;
}

/** The context a seat on these files needs for `cfg` (its JSON files only). */
export async function onnxSeatContext(files: HfFiles, cfg: SeatSettings, mode: OnnxSeatMode): Promise<number> {
  return (await headOf(files, cfg, mode)).context;
}

/** Reads an ONNX folder's seat (header); `entries` as hfFiles.ts folderEntries gives them. */
export async function readOnnxSeatFolder(
  folder: string,
  entries: ReadonlyMap<string, FileLike>,
  cfg: SeatSettings,
  limit: { bytes: number; where: string },
  quant: QuantKind,
  mode: OnnxSeatMode,
  onRead?: (done: number, total: number) => void,
  chosen?: string,
): Promise<ReadCheckpoint> {
  const available = onnxFolderFiles(entries.keys());
  const file = chosen ?? available[0];
  if (file === undefined) throw new FormatError('ONNX folder: no .onnx file (onnx/model.onnx, onnx/model_q4.onnx, …)');
  if (!available.includes(file)) throw new FormatError(`ONNX folder: "${file}" is not one of its .onnx files (it has: ${available.join(', ')}); pick the folder that holds it`);
  const names = filesOfSeat(entries.keys(), file).sort();
  const configFile = entries.get('config.json');
  if (configFile === undefined) throw new FormatError('ONNX folder: "config.json" is missing; an ONNX model folder has config.json, tokenizer.json and a .onnx file');
  // Every JSON file's size before its bytes: the small files' cap, the tokenizer's from the vocabulary config.json declares.
  const head = new Map<string, Uint8Array>([['config.json', await jsonBytes('config.json', configFile, MAX_SMALL_JSON_BYTES)]]);
  const vocab = declaredVocab(head.get('config.json')!);
  for (const n of names) {
    if (n.endsWith('.json') && n !== 'config.json') head.set(n, await jsonBytes(n, entries.get(n)!, n === 'tokenizer.json' && vocab !== undefined ? maxTokenizerBytes(vocab) : MAX_SMALL_JSON_BYTES));
  }
  const graphBytes = names.filter((n) => !n.endsWith('.json')).reduce((a, n) => a + entries.get(n)!.size, 0);
  const { estimate: e, context } = await estimate(head, cfg, quant, mode, graphBytes);
  checkFits(e, limit.bytes, limit.where); // before the graph is read
  // The graph through the budgeted door (a File goes to the worker unread), before this thread or onnxruntime holds it.
  const graph = entries.get(file)!;
  const sizes = names.filter((n) => n !== file && !n.endsWith('.json')).map((n) => [n, entries.get(n)!.size] as const);
  // The worker's read comes back with the verdict (transferred): the graph is read once.
  const checked = await checkInput('onnxGraph', { graph: typeof Blob !== 'undefined' && graph instanceof Blob ? graph : new Uint8Array(await graph.arrayBuffer()), file, sizes, keep: true }, `ONNX folder: "${file}"`);
  const files = new Map<string, Uint8Array>(head);
  if (checked.bytes !== undefined) files.set(file, checked.bytes);
  let bytes = 0;
  for (const [i, n] of names.entries()) {
    if (!files.has(n)) files.set(n, new Uint8Array(await entries.get(n)!.arrayBuffer()));
    bytes += files.get(n)!.byteLength;
    onRead?.(i + 1, names.length);
  }
  const [hf] = await loaders();
  const hash = await hf.hfFolderHash(files);
  const raw = readJson('ONNX folder: "config.json"', head.get('config.json')!, { maxBytes: MAX_SMALL_JSON_BYTES, maxDepth: MAX_JSON_DEPTH }) as { _name_or_path?: unknown };
  let params = 0; // a frozen seat's config.json may be any architecture's
  if (mode === 'trainable') {
    const { cfg: mc, info } = hf.readHfConfig(head, HF_SEAT_MAX_SEQ);
    params = checkpointParams(mc, info);
  }
  return { name: seatName(folder, hash, typeof raw._name_or_path === 'string' ? raw._name_or_path : ''), hash, files, quant, context, estimate: e, bytes, params, onnx: { file, mode } };
}
