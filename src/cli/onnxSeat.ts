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
 * Not here: the seat's logic (src/sat/onnxSeat.ts), the checkpoint seat (hfSeat.ts), flag parsing.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { ConfigError, SatError } from '../core/errors';
import { describeConfig } from '../model/config';
import { describeEstimate, estimateMemory, formatBytes } from '../model/hfConfig';
import { hfTokenizerOf } from '../model/hfLoad';
import type { HfModel } from '../model/hfLoad';
import { onnxFilesOf, readOnnxLlamaHead } from '../model/onnx/llama';
import { describeOnnxFrozen } from '../model/onnx/folder';
import { describeParity } from '../model/onnx/parity';
import type { QuantKind } from '../model/quant';
import { LmAgent } from '../sat/agents/lm';
import type { Config } from '../sat/config';
import type { Experiment, LlmExperiment, LmSeat } from '../sat/experiment';
import { hfSeatAgent, hfSeatBudget, hfSeatContext, hfSeatSeed } from '../sat/hfSeat';
import { seatOnnxFrozen, seatOnnxTrainable } from '../sat/onnxSeat';

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

/** The folder's JSON files, `file` and the data files beside it whose names start with its name. */
export async function readOnnxFolder(dir: string, file: string): Promise<Map<string, Uint8Array>> {
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new SatError('model', `--agent-model: "${dir}" is not a folder that can be read`);
  }
  const files = new Map<string, Uint8Array>();
  for (const name of (await list(dir)).sort()) if (name.endsWith('.json')) files.set(name, new Uint8Array(await readFile(join(dir, name))));
  const sub = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
  const base = file.slice(sub.length);
  for (const name of (await list(join(dir, sub))).sort()) {
    if (name === base || (name.startsWith(base) && !name.endsWith('.onnx'))) files.set(sub + name, new Uint8Array(await readFile(join(dir, sub, name))));
  }
  return files;
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
    throw new ConfigError('agent-onnx-file', o.file, `--agent-model ${j}=${dir}: ${o.file === undefined ? 'the folder has no .onnx file' : `"${o.file}" is not one of the folder's .onnx files`} (it has: ${available.join(', ') || 'none'}).`);
  }
  const files = await readOnnxFolder(dir, file);
  const limit = o.limitBytes ?? Math.floor(0.8 * totalmem());
  const where = o.limitBytes === undefined ? 'this machine (80 % of its memory)' : '--agent-memory';
  const lx = exp as LlmExperiment;
  const old = lx.team[j]!;
  if (o.mode === 'frozen') {
    const seat = await seatOnnxFrozen(files, file, cfg, j, { temperature: cfg.temperature, topK: cfg.topK, memory: { limitBytes: limit, where } });
    o.log(`agent ${j} ← ${dir}/${file}: frozen, run by onnxruntime-web (${seat.agent.decoder.ep}); context ${seat.context}; memory estimate ${describeOnnxFrozen(seat.estimate)} (limit ${formatBytes(limit)}); other files of the folder: ${available.filter((f) => f !== file).join(', ') || 'none'}`);
    // A frozen teammate is an LmAgentPolicy without a Model: the stage loop and the environment
    // use only the policy's methods; the paths that reach into a seat's model (a plug-and-play
    // swap, the page's inspector) are refused for it or never reached from the CLI.
    lx.team[j] = seat.agent as unknown as LmSeat;
    o.log(`  agent ${j} is ${seat.info.name}: never updated (ratio 1 in every estimator); turns marked ${seat.info.tokenizer.turns === 'chat' ? 'by its chat template' : 'as plain text ("agent i:")'}; messages end at token ${seat.info.tokenizer.eos}`);
  } else {
    const head = readOnnxLlamaHead(files, file);
    const context = hfSeatContext(cfg, hfTokenizerOf(files, head.cfg, head.info), head.info.maxPositions);
    const budget = hfSeatBudget(cfg, context);
    const mc = { ...head.cfg, maxSeq: context };
    o.log(`agent ${j} ← ${dir}/${file}: trainable; ${describeConfig(mc)}; ${o.quant}, LoRA rank ${budget.loraRank}; memory estimate for ${budget.sequences} sequences × ${context} tokens (sampling ${budget.prompts}): ${describeEstimate(estimateMemory(mc, { quant: o.quant, ...budget }))} (limit ${formatBytes(limit)})`);
    const seat = await seatOnnxTrainable(files, file, cfg, j, { quant: o.quant, maxSeq: context, memory: { limitBytes: limit, where, ...budget } });
    o.log(`  parity with onnxruntime-web (${seat.ep}): ${describeParity(seat.parity)}`);
    const agent = hfSeatAgent(j, seat.model as HfModel, { loraRank: budget.loraRank, loraAlpha: cfg.loraAlpha, seed: hfSeatSeed(cfg.seed, j), temperature: cfg.temperature, topK: cfg.topK });
    lx.team[j] = agent;
    o.log(`  agent ${j} is ${seat.model.name}: ${agent.model.paramCount().toLocaleString('en-US')} LoRA parameters over a frozen ${o.quant} base read from ${[...new Set(seat.model.onnx.encodings.values())].join(' / ')} initializers`);
  }
  if (old instanceof LmAgent) old.model.dispose();
  const j0 = (await lx.env.evaluate(lx.team)).J;
  return { ...exp, j0 };
}
