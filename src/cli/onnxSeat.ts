/**
 * `npm run sat -- --agent-model J=DIR` when DIR is an ONNX model folder (the transformers.js /
 * onnx-community layout: config.json, tokenizer.json, tokenizer_config.json, a .onnx file in DIR
 * or DIR/onnx with its external data): seats it as agent J, frozen or trainable as
 * `--agent-onnx` says, from the file `--agent-onnx-file` names (default: onnx/model.onnx, else the
 * first .onnx file in sorted order; the CLI lists them).
 *   trainable  the initializers mapped into our model (stored as --agent-quant), LoRA on top, after
 *              the parity check against onnxruntime-web on the preset's prompts (src/sat/onnxSeat.ts)
 *   frozen     the graph itself run by onnxruntime-web (wasm in Node), never updated
 * Only the chosen .onnx file and the data files beside it that start with its name are read (a
 * folder often holds several variants of the same model).
 *
 * `--swap J=DIR` (swapTo = onnx) with DIR an ONNX folder or one of its .onnx files: the swap target
 * of agent J (onnxSwapLoader), which must share the seat's tokenizer.
 *
 * Not here: the seat's logic (src/sat/onnxSeat.ts), the checkpoint seat (hfSeat.ts), flag parsing.
 */
import { readdir } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { ConfigError } from '../core/errors';
import { MAX_SMALL_JSON_BYTES } from '../core/limits';
import { describeConfig } from '../model/config';
import { describeEstimate, estimateMemory, formatBytes } from '../model/hfConfig';
import type { HfModel } from '../model/hfLoad';
import { onnxFilesOf, readOnnxLlamaHead } from '../model/onnx/llama';
import { describeOnnxFrozen } from '../model/onnx/folder';
import { describeParity } from '../model/onnx/parity';
import type { QuantKind } from '../model/quant';
import { LmAgent, type LmAgentPolicy } from '../sat/agents/lm';
import type { Config } from '../sat/config';
import type { Experiment, LlmExperiment } from '../sat/experiment';
import { hfSeatAgent, hfSeatBudget, hfSeatSeed } from '../sat/hfSeat';
import type { HfContextSettings } from '../sat/hfSeatLimits';
import { checkSwapTokenizer, prepareOnnxSwap, seatOnnxFrozen, seatOnnxTrainable, type OnnxSeatHead, type OnnxSwapTarget } from '../sat/onnxSeat';
import { tokenizer as charTokenizer } from '../model/tokenizer';
import { openFolder, regularFile } from './folderFiles';
import { cliCheck } from './inputCheck';
import { escapeControl } from '../core/text';
import type { Check } from '../workers/budget';
import type { CheckedPath } from '../workers/inputJobs';

export type OnnxSeatMode = 'trainable' | 'frozen';
export const ONNX_SEAT_MODES: readonly OnnxSeatMode[] = ['trainable', 'frozen'];

async function list(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

/** The .onnx files of a folder (DIR and DIR/onnx), as names relative to DIR; [] when it has none or holds a safetensors checkpoint. */
export async function onnxFilesIn(dir: string): Promise<string[]> {
  const top = await list(dir);
  if (top.some((n) => n.endsWith('.safetensors') || n === 'model.safetensors.index.json')) return [];
  const names = [...top.filter((n) => n.endsWith('.onnx')), ...(await list(join(dir, 'onnx'))).filter((n) => n.endsWith('.onnx')).map((n) => `onnx/${n}`)];
  return onnxFilesOf(new Map(names.map((n) => [n, new Uint8Array(0)])));
}

/** How messages name the folder. */
const ONNX_FOLDER = 'ONNX folder';

/**
 * The folder's JSON files, `file` and the data files beside it whose names start with its name,
 * each checked here as a regular file inside the folder without reading it (folderFiles.ts
 * regularFile): JSON files held to the small files' cap, the tokenizer, the graph and its data to
 * `cap` (the machine's memory: the seat's own estimate, checked later, says more). Their bytes are
 * read only in the budgeted worker thread (src/workers/inputJobs.ts onnxFolder), which holds the
 * tokenizer to its vocabulary's cap, runs the seat's head (`settings`, `mode`: its tokenizer and
 * chat template on the task's prompts) and checks the graph (caps, operators, cycles, external
 * data) before it hands the bytes back — so a hostile folder is refused by name, within the
 * budget, before this process parses a byte of it.
 */
export async function readOnnxFolder(dir: string, file: string, cap: number, seat: { readonly settings: HfContextSettings; readonly mode: OnnxSeatMode }, check: Check = cliCheck()): Promise<{ files: Map<string, Uint8Array>; head: OnnxSeatHead }> {
  const { root, names } = await openFolder(dir, 'give the folder holding config.json, tokenizer.json and onnx/model.onnx');
  const sources: { name: string; source: CheckedPath }[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const small = name !== 'tokenizer.json'; // the tokenizer's cap comes from config.json's vocab_size, applied in the worker
    sources.push({ name, source: await regularFile(root, name, small ? MAX_SMALL_JSON_BYTES : cap, !small ? 'on this machine' : name === 'config.json' ? 'as a config file' : 'as a JSON file', ONNX_FOLDER) });
  }
  const sub = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
  const base = file.slice(sub.length);
  for (const name of (await list(join(root, sub))).sort()) {
    if (name === base || (name.startsWith(base) && !name.endsWith('.onnx'))) sources.push({ name: sub + name, source: await regularFile(root, sub + name, cap, 'on this machine', ONNX_FOLDER) });
  }
  const r = await check('onnxFolder', { file, files: sources, settings: seatSettings(seat.settings), mode: seat.mode }, `${ONNX_FOLDER} ${escapeControl(dir)}: ${escapeControl(file)}`);
  return { files: new Map(r.names.map((n, i) => [n, r.bytes[i]!])), head: r.head };
}

/** The settings the seat's head reads, alone (what crosses to the worker). */
function seatSettings(c: HfContextSettings): HfContextSettings {
  return { task: c.task, taskSeed: c.taskSeed, level: c.level, formatReward: c.formatReward, protocol: c.protocol, agents: c.agents, maxNew: c.maxNew };
}

export interface OnnxSeatCliOptions {
  readonly mode: OnnxSeatMode;
  /** The .onnx file (relative to DIR); default the first of onnxFilesIn. */
  readonly file?: string;
  readonly quant: QuantKind;
  readonly limitBytes?: number;
  readonly log: (line: string) => void;
}

/** Replaces agent `j` by the ONNX model in `dir` (header); returns the experiment with J at start re-estimated. */
export async function seatOnnxAgent(exp: Experiment, cfg: Config, j: number, dir: string, o: OnnxSeatCliOptions): Promise<Experiment> {
  const available = await onnxFilesIn(dir);
  const file = o.file ?? available[0];
  if (file === undefined || !available.includes(file)) {
    throw new ConfigError('agent-onnx-file', o.file, `--agent-model ${j}=${escapeControl(dir)}: ${o.file === undefined ? 'the folder has no .onnx file' : `"${escapeControl(o.file)}" is not one of the folder's .onnx files`} (it has: ${escapeControl(available.join(', ')) || 'none'}).`);
  }
  const { files, head: seatHead } = await readOnnxFolder(dir, file, Math.floor(0.8 * totalmem()), { settings: cfg, mode: o.mode });
  const limit = o.limitBytes ?? Math.floor(0.8 * totalmem());
  const where = o.limitBytes === undefined ? 'this machine (80 % of its memory)' : '--agent-memory';
  const lx = exp as LlmExperiment;
  const old = lx.team[j]!;
  if (o.mode === 'frozen') {
    const seat = await seatOnnxFrozen(files, file, cfg, j, { temperature: cfg.temperature, topK: cfg.topK, memory: { limitBytes: limit, where } });
    o.log(`agent ${j} ← ${escapeControl(`${dir}/${file}`)}: frozen, run by onnxruntime-web (${seat.agent.decoder.ep}); context ${seat.context}; memory estimate ${describeOnnxFrozen(seat.estimate)} (limit ${formatBytes(limit)}); other files of the folder: ${escapeControl(available.filter((f) => f !== file).join(', ')) || 'none'}`);
    lx.team[j] = seat.agent;
    o.log(`  agent ${j} is ${seat.info.name}: never updated (ratio 1 in every estimator); turns marked ${seat.info.tokenizer.turns === 'chat' ? 'by its chat template' : 'as plain text ("agent i:")'}; messages end at token ${seat.info.tokenizer.eos}`);
  } else {
    const head = readOnnxLlamaHead(files, file);
    const context = seatHead.context;
    const budget = hfSeatBudget(cfg, context);
    const mc = { ...head.cfg, maxSeq: context };
    o.log(`agent ${j} ← ${escapeControl(`${dir}/${file}`)}: trainable; ${describeConfig(mc)}; ${o.quant}, LoRA rank ${budget.loraRank}; memory estimate for ${budget.sequences} sequences × ${context} tokens (sampling ${budget.prompts}): ${describeEstimate(estimateMemory(mc, { quant: o.quant, ...budget }))} (limit ${formatBytes(limit)})`);
    const seat = await seatOnnxTrainable(files, file, cfg, j, { quant: o.quant, maxSeq: context, memory: { limitBytes: limit, where, ...budget } });
    o.log(`  parity with onnxruntime-web (${seat.ep}): ${describeParity(seat.parity)}`);
    const agent = hfSeatAgent(j, seat.model as HfModel, { loraRank: budget.loraRank, loraAlpha: cfg.loraAlpha, seed: hfSeatSeed(cfg.seed, j), temperature: cfg.temperature, topK: cfg.topK, activations: cfg.activations });
    lx.team[j] = agent;
    o.log(`  agent ${j} is ${seat.model.name}: ${agent.model.paramCount().toLocaleString('en-US')} LoRA parameters over a frozen ${o.quant} base read from ${[...new Set(seat.model.onnx.encodings.values())].join(' / ')} initializers`);
  }
  if (old instanceof LmAgent) old.model.dispose();
  const j0 = (await lx.env.evaluate(lx.team)).J;
  return { ...exp, j0 };
}

/** Where `--swap J=PATH` points: a folder (its first .onnx file) or one .onnx file in it or its onnx/. */
async function resolveOnnxPath(path: string): Promise<{ dir: string; file: string }> {
  if (path.endsWith('.onnx')) {
    const parent = dirname(path);
    return basename(parent) === 'onnx' ? { dir: dirname(parent), file: `onnx/${basename(path)}` } : { dir: parent, file: basename(path) };
  }
  const file = (await onnxFilesIn(path))[0];
  if (file === undefined) throw new ConfigError('swapTo', path, `--swap …=${escapeControl(path)}: not an ONNX model folder (no .onnx file in it or in its onnx/; a shipped model is named <task>-<size>, e.g. arithmetic-M).`);
  return { dir: path, file };
}

/**
 * The loader of a swap of agent j onto the ONNX folder or .onnx file `path` (`--swap J=PATH`,
 * swapTo = onnx): the folder read and its tokenizer checked against the seat's now, so a swap
 * across tokenizers is refused by name before the run starts; the weights mapped and the graph
 * checked against onnxruntime-web when the swap is due (src/sat/onnxSeat.ts `prepareOnnxSwap`).
 */
export async function onnxSwapLoader(exp: Experiment, cfg: Config, j: number, path: string, o: Omit<OnnxSeatCliOptions, 'mode' | 'file'>): Promise<() => Promise<OnnxSwapTarget>> {
  const { dir, file } = await resolveOnnxPath(path);
  const limit = o.limitBytes ?? Math.floor(0.8 * totalmem());
  const where = o.limitBytes === undefined ? 'this machine (80 % of its memory)' : '--agent-memory';
  const { files, head: seatHead } = await readOnnxFolder(dir, file, limit, { settings: cfg, mode: 'trainable' });
  const seat = (exp as LlmExperiment).team[j] as LmAgentPolicy & { readonly name: string };
  checkSwapTokenizer(files, file, cfg, j, seat.tokenizer ?? charTokenizer, seat.name);
  const head = readOnnxLlamaHead(files, file);
  const context = seatHead.context;
  const budget = hfSeatBudget(cfg, context);
  o.log(`swap target for agent ${j}: ${escapeControl(`${dir}/${file}`)} (same tokenizer as ${seat.name}); ${describeConfig({ ...head.cfg, maxSeq: context })}; ${o.quant}, LoRA rank ${budget.loraRank}`);
  return async () => {
    const t = await prepareOnnxSwap(files, file, cfg, j, seat.tokenizer ?? charTokenizer, seat.name, { quant: o.quant, maxSeq: context, loraRank: budget.loraRank, memory: { limitBytes: limit, where, ...budget } });
    o.log(`  swap target ${escapeControl(file)}: parity with onnxruntime-web (${t.ep}): ${describeParity(t.parity)}; π_pre is computed by onnxruntime-web`);
    return t;
  };
}
