/**
 * `npm run sat -- --agent-model J=DIR`: seats a Hugging Face Llama checkpoint folder (DIR) as
 * agent J of a language team. The folder's files are read from disk into the name → bytes map
 * src/model/hfLoad.ts takes (the page builds the same map from File objects), the memory an
 * agent on it will hold is estimated from config.json and refused before anything is allocated
 * when it does not fit, then the checkpoint is converted and quantized on load (q8 unless
 * --agent-quant says otherwise) and trains LoRA adapters (rank = the `lora` setting, 8 when it
 * is 0) on the CPU backend, prompted with its own tokenizer (chat template when it has one), on
 * contexts of the length the preset needs with that tokenizer (src/sat/hfSeat.ts hfSeatContext,
 * measured on the task's prompts before the weights are read; refused by name when the checkpoint
 * is shorter). The estimate counts one training pass over the agent's batch × group messages at
 * that length (an LM agent packs them into one forward) and sampling max(batch × group,
 * evalEpisodes) prompts at once.
 * Progress lines go to the `log` callback (stderr in the CLI). The budget, the LoRA seed and the
 * agent itself come from src/sat/hfSeat.ts, which the page's worker uses too.
 *
 * Not here: the loader's checks (hfLoad.ts), the agent (src/sat/agents/lm.ts, built by
 * src/sat/hfSeat.ts), flag parsing (sat.ts).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { ConfigError, SatError } from '../core/errors';
import { describeConfig } from '../model/config';
import { describeEstimate, estimateMemory, formatBytes, parseHfConfig } from '../model/hfConfig';
import { hfTokenizerOf, loadHfCheckpoint, readHfConfig, type HfFiles } from '../model/hfLoad';
import type { QuantKind } from '../model/quant';
import { LmAgent } from '../sat/agents/lm';
import type { Config } from '../sat/config';
import type { Experiment, LlmExperiment } from '../sat/experiment';
import { onnxFilesIn, seatOnnxAgent, type OnnxSeatMode } from './onnxSeat';
import { HF_DEFAULT_LORA_RANK, HF_SEAT_MAX_SEQ, hfSeatAgent, hfSeatBudget, hfSeatContext, hfSeatSeed, hfSwapRefusal } from '../sat/hfSeat';

export { HF_DEFAULT_LORA_RANK };

/** Context a checkpoint's config is first read with (positions): src/sat/hfSeat.ts HF_SEAT_MAX_SEQ, the page's too; the seat's own is measured (hfSeatContext). */
export const HF_CLI_MAX_SEQ = HF_SEAT_MAX_SEQ;

/** The files of a checkpoint folder the loader reads (safetensors shards, JSON configs), by name. */
export async function readHfFolder(dir: string): Promise<HfFiles> {
  let names: string[];
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
    names = await readdir(dir);
  } catch {
    throw new SatError('model', `--agent-model: "${dir}" is not a folder that can be read; give the folder holding config.json, model.safetensors and tokenizer.json`);
  }
  const files = new Map<string, Uint8Array>();
  for (const name of names.sort()) {
    if (name.endsWith('.safetensors') || name.endsWith('.json')) files.set(name, new Uint8Array(await readFile(join(dir, name))));
  }
  return files;
}

export interface HfSeatOptions {
  readonly quant: QuantKind;
  /** An ONNX folder's seat: frozen or trainable, and which .onnx file (src/cli/onnxSeat.ts). */
  readonly onnx?: { readonly mode: OnnxSeatMode; readonly file?: string };
  /** Refuse above this many bytes (default 80 % of the machine's memory). */
  readonly limitBytes?: number;
  readonly log: (line: string) => void;
}

/** Replaces agent `j` of a language experiment by the checkpoint in `dir`; returns the experiment with J at start re-estimated. */
export async function seatHfAgent(exp: Experiment, cfg: Config, j: number, dir: string, o: HfSeatOptions): Promise<Experiment> {
  if (!Number.isInteger(j) || j < 0 || j >= cfg.agents) {
    throw new ConfigError('agent-model', j, `--agent-model ${j}=…: the team has agents 0..${cfg.agents - 1}.`);
  }
  const swap = hfSwapRefusal(cfg, j, dir);
  if (swap) throw new ConfigError('swapAgent', cfg.swapAgent, `--agent-model ${j}=…: ${swap}`);
  if ((await onnxFilesIn(dir)).length > 0) return seatOnnxAgent(exp, cfg, j, dir, { mode: o.onnx?.mode ?? 'trainable', file: o.onnx?.file, quant: o.quant, limitBytes: o.limitBytes, log: o.log });
  const lx = exp as LlmExperiment;
  const files = await readHfFolder(dir);
  // The context the preset needs with this checkpoint's tokenizer (config.json and the tokenizer's
  // files only; their own messages come from here when they are malformed).
  const head = readHfConfig(files, HF_CLI_MAX_SEQ);
  const context = hfSeatContext(cfg, hfTokenizerOf(files, head.cfg, head.info), head.info.maxPositions);
  const budget = hfSeatBudget(cfg, context);
  const rank = budget.loraRank;
  const limit = o.limitBytes ?? Math.floor(0.8 * totalmem());
  // The estimate is printed before the load (loadHfCheckpoint refuses with it when it does not fit).
  const { cfg: mc } = parseHfConfig(head.raw, { maxSeq: context });
  o.log(`agent ${j} ← ${dir}: ${describeConfig(mc)}; ${o.quant}, LoRA rank ${rank}; memory estimate for ${budget.sequences} sequences × ${context} tokens (the context this preset needs with its tokenizer; sampling ${budget.prompts}): ${describeEstimate(estimateMemory(mc, { quant: o.quant, ...budget }))} (limit ${formatBytes(limit)})`);
  let last = '';
  const m = await loadHfCheckpoint(files, {
    quant: o.quant,
    maxSeq: context,
    memory: { limitBytes: limit, where: o.limitBytes === undefined ? 'this machine (80 % of its memory)' : '--agent-memory', ...budget },
    onProgress: (p) => {
      const line = `  ${p.phase} ${p.done}/${p.total}`;
      if (p.done === p.total && line !== last) o.log(`${line}${p.phase === 'reading' ? ' files' : ' tensors'}`);
      last = line;
    },
  });
  const agent = hfSeatAgent(j, m, { loraRank: rank, loraAlpha: cfg.loraAlpha, seed: hfSeatSeed(cfg.seed, j), temperature: cfg.temperature, topK: cfg.topK });
  const old = lx.team[j]!;
  lx.team[j] = agent;
  if (old instanceof LmAgent) old.model.dispose();
  o.log(`  agent ${j} is ${m.name}: ${agent.model.paramCount().toLocaleString('en-US')} LoRA parameters over a frozen ${o.quant} base; turns marked ${m.tokenizer.turns === 'chat' ? 'by its chat template' : 'as plain text ("agent i:")'}; messages end at token ${m.tokenizer.eos}`);
  const j0 = (await lx.env.evaluate(lx.team)).J;
  return { ...exp, j0 };
}
