/**
 * An ONNX model folder as one seat of a language team — the pieces the CLI (src/cli/onnxSeat.ts)
 * and the page's worker (src/workers/agentApi.ts) share, beside the checkpoint seat's
 * (hfSeat.ts: the context, the budget, the LoRA seed, the agent are the same):
 *
 *   onnxSeatPrompts(cfg, tk, j)   the preset's own prompts for seat j, encoded with the seat's
 *                          tokenizer (chat template included): what the parity check runs on
 *   seatOnnxTrainable(files, file, …)  the trainable seat's model: the initializers mapped into
 *                          our model (src/model/onnx/llama.ts), then the same file run by
 *                          onnxruntime-web on those prompts and compared with our model on the
 *                          file's exact values; refused past ONNX_PARITY_TOLERANCE with the numbers
 *   seatOnnxFrozen(files, file, …)  a frozen teammate (agents/frozen.ts): any decoder the graph
 *                          runs, its context measured for the preset with its tokenizer, its
 *                          memory estimated and checked before onnxruntime-web starts
 *
 * Not here: reading the protobuf or mapping weights (src/model/onnx/), the frozen agent itself
 * (agents/frozen.ts), reading a folder from disk or from File objects.
 */
import { readJson } from '../core/json';
import { MAX_JSON_DEPTH, MAX_SMALL_JSON_BYTES } from '../core/limits';
import type { ModelConfig } from '../model/config';
import { hfTokenizerOf, readHfConfig, type HfLoadOptions } from '../model/hfLoad';
import type { HfTurns } from '../model/hfTokenizer';
import { checkOnnxFrozenFits, estimateOnnxFrozen, readOnnxFolderInfo, type OnnxFolderInfo, type OnnxFrozenEstimate } from '../model/onnx/folder';
import { loadOnnxLlama, type OnnxLlama } from '../model/onnx/llama';
import { OrtDecoder, type OrtProvider } from '../model/onnx/ort';
import { checkParity, onnxParity, type OnnxParity } from '../model/onnx/parity';
import { readOnnx } from '../model/onnx/read';
import type { TextTokenizer } from '../model/tokenizer';
import { makeLlmTask } from '../tasks/llm/index';
import { nextTurn, type Message } from '../tasks/llm/protocols';
import { FrozenOnnxAgent } from './agents/frozen';
import { resolvedProtocol, type Config } from './config';
import { HF_SEAT_MAX_SEQ, hfSeatContext, type HfContextSettings } from './hfSeat';

/** Prompts of the preset the parity check runs on. */
export const ONNX_PARITY_PROMPTS = 4;

/**
 * Seat j's contexts for the task's first training problems (the earlier agents' messages empty),
 * encoded with `tk`, each cut to `maxLen` tokens; `n` distinct ones at most.
 */
export function onnxSeatPrompts(cfg: HfContextSettings, tk: TextTokenizer, j: number, maxLen: number, n = ONNX_PARITY_PROMPTS): Int32Array[] {
  const task = makeLlmTask(cfg.task as Parameters<typeof makeLlmTask>[0], { seed: cfg.taskSeed, level: cfg.level, formatReward: cfg.formatReward });
  const protocol = resolvedProtocol(cfg as Config);
  const out: Int32Array[] = [];
  const seen = new Set<string>();
  for (let i = 0; out.length < n && i < 4 * n; i++) {
    const problem = task.generate('train', i);
    const spec = { protocol, nAgents: cfg.agents, sample: 0 };
    const messages: Message[] = [];
    for (let slots = nextTurn(spec, problem, messages); slots.length > 0 && out.length < n; slots = nextTurn(spec, problem, messages)) {
      for (const slot of slots) {
        if (slot.agent === j && !seen.has(slot.context)) {
          seen.add(slot.context);
          const ids = tk.encodeContext(slot.context).slice(0, maxLen);
          if (ids.length > 0) out.push(Int32Array.from(ids));
        }
      }
      for (const slot of slots) messages.push({ turn: slot.turn, agent: slot.agent, text: '' });
    }
  }
  return out;
}

/** What a seat on an ONNX folder's JSON files needs before its graph is read (onnxSeatHead). */
export interface OnnxSeatHead {
  /** The context the preset needs with the folder's tokenizer (hfSeatContext). */
  readonly context: number;
  readonly vocab: number;
  /** config.json as parsed (a frozen seat's may be any architecture's). */
  readonly config: unknown;
  /** A trainable seat's model config at that context (untied: an ONNX head is its own weight). */
  readonly mc?: ModelConfig;
}

/**
 * The head of a seat on `files` (the folder's JSON files) for `settings`: config.json read within
 * its bounds, the tokenizer and chat template built and run on the task's prompts. Pure, so the
 * page runs it in a budgeted worker (src/workers/inputJobs.ts).
 */
export function onnxSeatHead(files: ReadonlyMap<string, Uint8Array>, settings: HfContextSettings, mode: 'trainable' | 'frozen'): OnnxSeatHead {
  if (mode === 'trainable') {
    const { cfg: mc, info, raw } = readHfConfig(files, HF_SEAT_MAX_SEQ);
    const context = hfSeatContext(settings, hfTokenizerOf(files, mc, info), info.maxPositions);
    return { context, vocab: mc.vocab, config: raw, mc: { ...mc, tied: false, maxSeq: context } };
  }
  const info = readOnnxFolderInfo(files);
  const config = readJson('ONNX folder: "config.json"', files.get('config.json') ?? new Uint8Array(), { maxBytes: MAX_SMALL_JSON_BYTES, maxDepth: MAX_JSON_DEPTH });
  return { context: hfSeatContext(settings, info.tokenizer, info.maxPositions), vocab: info.vocab, config };
}

export interface OnnxTrainableSeat {
  /** The seat's model as stored (the f32 copy of the file's values is dropped after the check). */
  readonly model: Omit<OnnxLlama, 'exact'>;
  readonly parity: OnnxParity;
  /** The execution provider the check ran on. */
  readonly ep: OrtProvider;
}

/**
 * Loads `file` of an ONNX folder as a trainable seat's model and checks it against onnxruntime-web
 * on the preset's prompts (header). The check's session is released before returning.
 */
export async function seatOnnxTrainable(files: ReadonlyMap<string, Uint8Array>, file: string, settings: HfContextSettings, j: number, opts: HfLoadOptions & { readonly ep?: OrtProvider } = {}): Promise<OnnxTrainableSeat> {
  const model = await loadOnnxLlama(files, file, opts);
  opts.signal?.throwIfAborted();
  const ep = opts.ep ?? 'wasm';
  const dec = await OrtDecoder.create(files, readOnnx(files, file), ep);
  try {
    const prompts = onnxSeatPrompts(settings, model.tokenizer, j, model.cfg.maxSeq - 1);
    const parity = await onnxParity(dec, model.cfg, model.exact, prompts);
    checkParity(parity, file);
    const { exact: _exact, ...stored } = model;
    return { model: stored, parity, ep };
  } finally {
    await dec.release();
  }
}

export interface OnnxFrozenSeatOptions {
  readonly ep?: OrtProvider;
  readonly temperature: number;
  readonly topK: number;
  /** Refuse before a session is created when the estimate exceeds it. */
  readonly memory?: { readonly limitBytes: number; readonly where: string };
  readonly turns?: HfTurns;
  /** Shown for the agent; "<name>#j" (default: config.json's _name_or_path). */
  readonly name?: string;
}

export interface OnnxFrozenSeat {
  readonly agent: FrozenOnnxAgent;
  readonly info: OnnxFolderInfo;
  readonly context: number;
  readonly estimate: OnnxFrozenEstimate;
}

/**
 * Agent j as a frozen ONNX teammate (agents/frozen.ts) on `file` of the folder: its context is
 * the one the preset needs with the folder's tokenizer (hfSeatContext, as a checkpoint seat's),
 * its memory estimated and checked before onnxruntime-web is loaded.
 */
export async function seatOnnxFrozen(files: ReadonlyMap<string, Uint8Array>, file: string, settings: HfContextSettings, j: number, o: OnnxFrozenSeatOptions): Promise<OnnxFrozenSeat> {
  const model = readOnnx(files, file);
  const info = readOnnxFolderInfo(files, model, o.turns);
  const context = hfSeatContext(settings, info.tokenizer, info.maxPositions);
  const estimate = estimateOnnxFrozen(files, model, info.vocab, context);
  if (o.memory) checkOnnxFrozenFits(estimate, o.memory.limitBytes, o.memory.where);
  const dec = await OrtDecoder.create(files, model, o.ep ?? 'wasm');
  const agent = new FrozenOnnxAgent(j, dec, info.tokenizer, { name: `${o.name ?? info.name}#${j}`, temperature: o.temperature, topK: o.topK, maxSeq: context });
  return { agent, info, context, estimate };
}

/**
 * The tokenizer a seat on `file` encodes with, and the longest context its model allows: what the
 * page's main thread needs (its environment encodes the seat's prompts) before the worker loads
 * the model. Trainable: config.json read as a Llama checkpoint's; frozen: read loosely (any decoder).
 */
export function onnxSeatTokenizer(files: ReadonlyMap<string, Uint8Array>, file: string, mode: 'trainable' | 'frozen'): { tokenizer: TextTokenizer; maxPositions: number } {
  if (mode === 'frozen') {
    const info = readOnnxFolderInfo(files, readOnnx(files, file));
    return { tokenizer: info.tokenizer, maxPositions: info.maxPositions };
  }
  const { cfg, info } = readHfConfig(files, HF_SEAT_MAX_SEQ);
  return { tokenizer: hfTokenizerOf(files, cfg, info), maxPositions: info.maxPositions };
}
