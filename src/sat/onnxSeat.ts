/**
 * An ONNX model folder as one seat of a language team — the pieces the CLI (src/cli/onnxSeat.ts)
 * and the page's worker (src/workers/agentApi.ts) share, beside the checkpoint seat's (hfSeat.ts:
 * the context, the budget, the LoRA seed and the agent are the same): the parity prompts, the
 * trainable seat (weights mapped into our model, checked against onnxruntime-web), the target of a
 * swap onto the folder, and the frozen teammate run by onnxruntime-web.
 *
 * Not here: reading the protobuf or mapping weights (src/model/onnx/), the frozen agent itself
 * (agents/frozen.ts), reading a folder from disk or from File objects.
 */
import { ConfigError } from '../core/errors';
import { readJson } from '../core/json';
import { MAX_JSON_DEPTH, MAX_SMALL_JSON_BYTES } from '../core/limits';
import type { ModelConfig } from '../model/config';
import { hfTokenizerOf, readHfConfig, type HfLoadOptions } from '../model/hfLoad';
import { HfTokenizer, type HfTurns } from '../model/hfTokenizer';
import { checkOnnxFrozenFits, estimateOnnxFrozen, readOnnxFolderInfo, type OnnxFolderInfo, type OnnxFrozenEstimate } from '../model/onnx/folder';
import { loadOnnxLlama, type OnnxLlama } from '../model/onnx/llama';
import { OrtDecoder, type OrtProvider } from '../model/onnx/ort';
import { checkParity, onnxParity, type OnnxParity } from '../model/onnx/parity';
import { readOnnx } from '../model/onnx/read';
import type { TextTokenizer } from '../model/tokenizer';
import { makeLlmTask } from '../tasks/llm/index';
import { nextTurn, type Message } from '../tasks/llm/protocols';
import { FrozenOnnxAgent } from './agents/frozen';
import type { ExternalLogits } from './agents/projected';
import { resolvedProtocol, type Config } from './config';
import { HF_SEAT_MAX_SEQ, hfSeatContext, hfSeatSeed, type HfContextSettings } from './hfSeat';

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
 * Loads `file` of an ONNX folder as a trainable seat's model (its initializers mapped into ours,
 * src/model/onnx/llama.ts) and runs the same file in onnxruntime-web on the preset's prompts
 * (onnxSeatPrompts), comparing with our model on the file's exact values: refused past
 * ONNX_PARITY_TOLERANCE with the numbers. The check's session is released before returning.
 */
export async function seatOnnxTrainable(files: ReadonlyMap<string, Uint8Array>, file: string, settings: HfContextSettings, j: number, opts: HfLoadOptions & { readonly ep?: OrtProvider } = {}): Promise<OnnxTrainableSeat> {
  const { seat, decoder } = await checkedOnnxLlama(files, file, settings, j, opts);
  await decoder.release();
  return seat;
}

/** The trainable seat's load and parity check, the session kept (the caller releases it). */
async function checkedOnnxLlama(files: ReadonlyMap<string, Uint8Array>, file: string, settings: HfContextSettings, j: number, opts: HfLoadOptions & { readonly ep?: OrtProvider }): Promise<{ seat: OnnxTrainableSeat; decoder: OrtDecoder }> {
  const model = await loadOnnxLlama(files, file, opts);
  opts.signal?.throwIfAborted();
  const ep = opts.ep ?? 'wasm';
  const dec = await OrtDecoder.create(files, readOnnx(files, file), ep);
  try {
    const prompts = onnxSeatPrompts(settings, model.tokenizer, j, model.cfg.maxSeq - 1);
    const parity = await onnxParity(dec, model.cfg, model.exact, prompts);
    checkParity(parity, file);
    const { exact: _exact, ...stored } = model;
    return { seat: { model: stored, parity, ep }, decoder: dec };
  } catch (e) {
    await dec.release();
    throw e;
  }
}

/**
 * Why two tokenizers are not the same (null when they are): the vocabulary size, the end token,
 * every id's text (both HfTokenizer), and the ids of the preset's prompts for seat j — what a
 * swap needs for the two policies' distributions to be over the same tokens of the same texts.
 */
export function tokenizerDifference(a: TextTokenizer, b: TextTokenizer, settings: HfContextSettings, j: number): string | null {
  if (a.vocabSize !== b.vocabSize) return `a vocabulary of ${a.vocabSize} ids against ${b.vocabSize}`;
  if (a.eos !== b.eos) return `messages end at token ${a.eos} against ${b.eos}`;
  if (a instanceof HfTokenizer !== b instanceof HfTokenizer) return 'the shipped character tokenizer against a tokenizer.json';
  if (a instanceof HfTokenizer && b instanceof HfTokenizer) {
    for (let i = 0; i < a.vocabSize; i++) {
      const [x, y] = [a.decode([i], true), b.decode([i], true)];
      if (x !== y) return `token ${i} is ${JSON.stringify(x.slice(0, 20))} against ${JSON.stringify(y.slice(0, 20))}`;
    }
  }
  const pa = onnxSeatPrompts(settings, a, j, Infinity);
  const pb = onnxSeatPrompts(settings, b, j, Infinity);
  for (let k = 0; k < Math.min(pa.length, pb.length); k++) {
    if (pa[k]!.length !== pb[k]!.length || pa[k]!.some((t, i) => t !== pb[k]![i])) return `the preset's prompt ${k} for agent ${j} is encoded differently (chat template or special tokens)`;
  }
  return pa.length === pb.length ? null : 'the preset\'s prompts are encoded differently';
}

/**
 * The target of a plug-and-play swap onto an ONNX folder (lmSwap.ts `seatSwap`): π_pre is the
 * graph run by onnxruntime-web (`pre`), the student that takes the seat over is the same file's
 * initializers mapped into our model (LoRA over the `quant` base, as a trainable ONNX seat), and
 * the two agreed on the preset's prompts within ONNX_PARITY_TOLERANCE (`parity`).
 */
export interface OnnxSwapTarget {
  readonly kind: 'onnx';
  readonly file: string;
  readonly model: Omit<OnnxLlama, 'exact'>;
  readonly pre: ExternalLogits;
  readonly parity: OnnxParity;
  readonly ep: OrtProvider;
  readonly lora: { readonly rank: number; readonly alpha: number; readonly seed: number };
}

/**
 * Loads `file` of an ONNX folder as the target of a swap of seat j, whose tokenizer is `seatTk`
 * (refused naming both when the folder's is another), checked against onnxruntime-web; the
 * session stays open as the projection's π_pre until the seat lets it go.
 */
export async function prepareOnnxSwap(files: ReadonlyMap<string, Uint8Array>, file: string, settings: HfContextSettings & Pick<Config, 'seed' | 'loraAlpha'>, j: number, seatTk: TextTokenizer, seatName: string, opts: HfLoadOptions & { readonly ep?: OrtProvider; readonly loraRank: number }): Promise<OnnxSwapTarget> {
  checkSwapTokenizer(files, file, settings, j, seatTk, seatName);
  const { seat, decoder } = await checkedOnnxLlama(files, file, settings, j, opts);
  const cfg = { vocab: seat.model.cfg.vocab, maxSeq: seat.model.cfg.maxSeq };
  const pre: ExternalLogits = {
    cfg,
    logitRows: (tokens, B, T, row) => decoder.logitRows(tokens, B, T, row, cfg.vocab),
    dispose: () => void decoder.release().catch(() => undefined),
  };
  return { kind: 'onnx', file, model: seat.model, pre, parity: seat.parity, ep: seat.ep, lora: { rank: opts.loraRank, alpha: settings.loraAlpha, seed: hfSeatSeed(settings.seed, j) } };
}

/** ConfigError('swapTo') naming both models when the folder's tokenizer is not seat j's (onnxSeatTokenizer, trainable reading). */
export function checkSwapTokenizer(files: ReadonlyMap<string, Uint8Array>, file: string, settings: HfContextSettings, j: number, seatTk: TextTokenizer, seatName: string): void {
  const { tokenizer } = onnxSeatTokenizer(files, file, 'trainable');
  const why = tokenizerDifference(seatTk, tokenizer, settings, j);
  if (why) throw new ConfigError('swapTo', 'onnx', `The swap of agent ${j} (${seatName}) onto ${file}: the two models do not share a tokenizer (${why}); a swap projects one policy onto the other token by token, so it needs the seat's own tokenizer — pick a model of the same family, or seat the folder with --agent-model instead.`);
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
