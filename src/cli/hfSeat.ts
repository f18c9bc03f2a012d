/**
 * `npm run sat -- --agent-model J=DIR`: seats a Hugging Face Llama checkpoint folder (DIR) as agent
 * J of a language team. The folder's files are checked on disk (regular files only) and read
 * through the door, in budgeted worker threads (openHfFolder): config.json, the caps it sets, the
 * JSON files and every safetensors header in one job, the weights by range in a range session —
 * into the name → file map src/model/hfLoad.ts takes (JSON files as bytes, safetensors files as
 * range readers), as the page builds it from File objects; the tokenizer and chat template first
 * run in a budgeted worker thread too, so a hostile folder ends in a message. The context, the memory estimate (refused before
 * anything is allocated), the LoRA seed and the agent come from src/sat/hfSeat.ts, which the
 * page's worker uses too. Progress lines go to the `log` callback (stderr in the CLI).
 *
 * Not here: the loader's checks (hfLoad.ts), the agent (src/sat/agents/lm.ts, built by
 * src/sat/hfSeat.ts), flag parsing (sat.ts).
 */
import { totalmem } from 'node:os';
import { cpuBackend } from '../backend/cpu';
import { ConfigError, SatError } from '../core/errors';
import { MAX_SMALL_JSON_BYTES } from '../core/limits';
import { describeConfig } from '../model/config';
import { describeEstimate, estimateMemory, formatBytes, parseHfConfig } from '../model/hfConfig';
import { loadHfCheckpoint, readHfConfig, type HfFolder, type HfModel } from '../model/hfLoad';
import type { QuantKind } from '../model/quant';
import { LmAgent } from '../sat/agents/lm';
import type { Config } from '../sat/config';
import type { Experiment, LlmExperiment } from '../sat/experiment';
import { HF_DEFAULT_LORA_RANK, HF_SEAT_MAX_SEQ, hfSeatAgent, hfSeatBudget, hfSeatSeed, hfSwapRefusal } from '../sat/hfSeat';
import type { Check, OpenRanges } from '../workers/budget';
import type { HfContextSettings } from '../sat/hfSeatLimits';
import type { CheckedPath } from '../workers/inputJobs';
import type { ByteRanges } from '../model/safetensors';
import { openFolder, regularFile } from './folderFiles';
import { cliCheck, cliRanges } from './inputCheck';
import { escapeControl } from '../core/text';
import { onnxFilesIn, seatOnnxAgent, type OnnxSeatMode } from './onnxSeat';

export { HF_DEFAULT_LORA_RANK };

/** Context a checkpoint's config is first read with (positions): src/sat/hfSeat.ts HF_SEAT_MAX_SEQ, the page's too; the seat's own is measured (hfSeatContext). */
export const HF_CLI_MAX_SEQ = HF_SEAT_MAX_SEQ;

/** A checkpoint folder opened for the loader: its files, and `close` for the ones held open. */
export interface OpenHfFolder {
  readonly files: HfFolder;
  /** The context the seat needs (openHfFolder given the seat's settings). */
  readonly context?: number;
  close(): Promise<void>;
}

/** Where openHfFolder's reads run (default: the CLI's budgeted worker threads, inputCheck.ts), and the seat's settings when its context is wanted too. */
export interface HfFolderReaders {
  readonly check?: Check;
  readonly ranges?: OpenRanges;
  readonly settings?: HfContextSettings;
}

/**
 * The files of a checkpoint folder the loader reads (safetensors shards, JSON configs), by name,
 * none read in this thread: each is checked on disk as a regular file inside the folder
 * (config.json within the small files' cap) and handed over as a checked path. The
 * checkpointFolder job reads config.json in a budgeted worker thread, holds every other file to
 * the size that config implies (hfLoad.ts hfFileCap) — so a folder whose tokenizer.json is a link
 * to /dev/zero, a pipe or a 180 MB vocabulary for 272 tokens is refused before it is read —,
 * reads the JSON files and checks every safetensors header (and, given a seat's settings, runs the
 * tokenizer and chat template on its prompts for the context it needs, as checkpointHead does);
 * the JSON files come back as bytes.
 * The safetensors files are then opened in a range session (inputCheck.ts cliRanges): the loader
 * reads each tensor by range as it converts it, each range read in that worker and handed over
 * (no copy of a file in memory). Close the folder when the load is done.
 */
export async function openHfFolder(dir: string, readers: HfFolderReaders = {}): Promise<OpenHfFolder> {
  const { root, names } = await openFolder(dir, 'give the folder holding config.json, model.safetensors and tokenizer.json');
  const kept = names.filter((n) => n.endsWith('.safetensors') || n.endsWith('.json')).sort();
  const sources: { name: string; source: CheckedPath }[] = [];
  for (const name of kept) {
    const small = name === 'config.json';
    sources.push({ name, source: await regularFile(root, name, small ? MAX_SMALL_JSON_BYTES : Number.POSITIVE_INFINITY, 'as a config file') });
  }
  const what = `--agent-model: the checkpoint folder ${escapeControl(dir)}`;
  const json = await (readers.check ?? cliCheck())('checkpointFolder', { files: sources, settings: readers.settings }, what);
  const weights = sources.filter((f) => f.name.endsWith('.safetensors'));
  const opened = await (readers.ranges ?? cliRanges())(weights, what);
  const read = new Map<string, Uint8Array | ByteRanges>([...json.names.map((n, i) => [n, json.bytes[i]!] as const), ...opened.files]);
  const files = new Map(sources.flatMap(({ name }) => (read.has(name) ? [[name, read.get(name)!] as const] : []))); // in the folder's order, by name
  return { files, close: opened.close, context: json.context };
}

export interface HfSeatOptions {
  readonly quant: QuantKind;
  /** An ONNX folder's seat: frozen or trainable, and which .onnx file (src/cli/onnxSeat.ts). */
  readonly onnx?: { readonly mode: OnnxSeatMode; readonly file?: string };
  /** Refuse above this many bytes (default 80 % of the machine's memory). */
  readonly limitBytes?: number;
  readonly log: (line: string) => void;
  /** Where the folder's tokenizer and template are first run (default: a budgeted worker thread, inputCheck.ts). */
  readonly check?: Check;
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
  // The context the preset needs with this checkpoint's tokenizer is worked out with the folder's
  // checks, in the budgeted worker thread: only a folder whose tokenizer and template finish there is loaded here.
  const folder = await openHfFolder(dir, { check: o.check, settings: cfg });
  const files = folder.files;
  const context = folder.context!;
  let m: HfModel;
  let rank: number;
  try {
    const head = readHfConfig(files, HF_CLI_MAX_SEQ);
    const budget = hfSeatBudget(cfg, context);
    rank = budget.loraRank;
    const limit = o.limitBytes ?? Math.floor(0.8 * totalmem());
    // The estimate is printed before the load (loadHfCheckpoint refuses with it when it does not fit).
    const { cfg: mc } = parseHfConfig(head.raw, { maxSeq: context });
    o.log(`agent ${j} ← ${escapeControl(dir)}: ${describeConfig(mc)}; ${o.quant}, LoRA rank ${rank}; memory estimate for ${budget.sequences} sequences × ${context} tokens (the context this preset needs with its tokenizer; sampling ${budget.prompts}): ${describeEstimate(estimateMemory(mc, { quant: o.quant, ...budget, hostCopy: false }))} (limit ${formatBytes(limit)})`);
    let last = '';
    m = await loadHfCheckpoint(files, {
      quant: o.quant,
      into: cpuBackend, // written into the CPU kernels' memory, where the seat's model takes them as they are (adopt)
      maxSeq: context,
      memory: { limitBytes: limit, where: o.limitBytes === undefined ? 'this machine (80 % of its memory)' : '--agent-memory', ...budget, hostCopy: false },
      onProgress: (p) => {
        const line = `  ${p.phase} ${p.done}/${p.total}`;
        if (p.done === p.total && line !== last) o.log(`${line}${p.phase === 'reading' ? ' files' : ' tensors'}`);
        last = line;
      },
    });
  } finally {
    await folder.close();
  }
  const agent = hfSeatAgent(j, m, { loraRank: rank, loraAlpha: cfg.loraAlpha, seed: hfSeatSeed(cfg.seed, j), temperature: cfg.temperature, topK: cfg.topK, activations: cfg.activations, adopt: true });
  const old = lx.team[j]!;
  lx.team[j] = agent;
  if (old instanceof LmAgent) old.model.dispose();
  o.log(`  agent ${j} is ${m.name}: ${agent.model.paramCount().toLocaleString('en-US')} LoRA parameters over a frozen ${o.quant} base; turns marked ${m.tokenizer.turns === 'chat' ? 'by its chat template' : 'as plain text ("agent i:")'}; messages end at token ${m.tokenizer.eos}`);
  const j0 = (await lx.env.evaluate(lx.team)).J;
  return { ...exp, j0 };
}
