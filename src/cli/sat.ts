/**
 * `npm run sat` — run SAT on a team (tabular or language models) from the command line: a run,
 * `--compare` of schemes over seeds, `--sweep` (the δ sweep of src/studies/deltaSweep.ts), a
 * `--swap`, `--certify-report`, `--export-recipe`, `--import-log`. `--help` lists every flag and
 * setting; README shows examples. Flags are read by flags.ts (an unknown or valueless one, or a
 * bad setting, exits with status 2 naming it); metric keys are those of the JSON export.
 *
 * Not here: any algorithm (src/sat) — this file parses flags and prints tables.
 */
import { perStageNote, VERDICTS, withNoise } from '../sat/verdicts';
import { existsSync, writeFileSync } from 'node:fs';
import { SatError } from '../core/errors';
import { fitPowerLaw, mean, meanCI } from '../core/stats';
import { CONFIG, CONFIG_KEYS, type Config, describeAllowed, diffConfig, parseAssignment } from '../sat/config';
import { loadFromDisk } from './models';
import { isLlmTask } from '../sat/config';
import { createTabularExperiment, planLlm, planTabular, runStages, type Experiment } from '../sat/experiment';
import { createLlmExperiment } from '../sat/llmExperiment';
import { exportRecipe, printRunLog } from './bridge';
import { configuredLmSwap } from '../sat/lmSwap';
import { ProjectedLmAgent } from '../sat/agents/projected';
import { lambdaHistogram } from '../sat/stage0';
import { PRESETS, presetConfig } from '../sat/presets';
import type { StageRecord } from '../sat/stage';
import { runSummarySchema, type RunSummary } from '../sat/records';
import { parse } from 'valibot';
import { certReport, type CertReportRow } from '../studies/certReport';
import { CERT_ESTIMATORS, type CertEstimator, type CertScope } from '../sat/certificate';
import type { HeldState } from '../sat/heldCheck';
import { attachProfiler, profileTable } from './profile';
import { StageProgress } from '../sat/stageProgress';
import type { StageProfiler } from '../sat/profile';
import { deltaSweep, SWEEP_SEEDS } from '../studies/deltaSweep';
import { type FlagSpec, readFlags, runCommand, UsageError } from './flags';
import { seatHfAgent } from './hfSeat';
import { BUDGETS, type BudgetName } from '../sat/hfSeatLimits';
import { escapeLines } from '../core/text';
import { ONNX_SEAT_MODES, onnxSwapLoader, type OnnxSeatMode } from './onnxSeat';
import { cliGpuBackends, type CliGpu } from './gpu';
import { QUANT_KINDS, type QuantKind } from '../model/quant';

interface Args {
  preset: string;
  sets: Record<string, string>;
  json?: string;
  compare?: string[];
  sweep?: { key: string; values: string[] };
  seeds: number;
  /** The model named by --swap J=<task>-<size> (checked against the task once the config is known). */
  swapModel?: string;
  /** --swap J=PATH onto an ONNX folder or .onnx file (swapTo = onnx). */
  swapOnnx?: string;
  /** Language swaps with Stage-0: the projection samples at once (default), or the distilled student. */
  swapSeat: 'projection' | 'student';
  quiet: boolean;
  /** --certify-report: how often the certificate proves an improvement, per preset. */
  certifyReport: boolean;
  /** --held-pairs N: CRN pairs of each language stage's check of its bound (certify report; default 2,048). */
  heldPairs?: number;
  /** --cert-scope team|agents: which bound the certify report's runs use (default: each environment's own). */
  certScope?: CertScope;
  /** --cert-estimator truncated-is|mixture|paired: the language team-level estimator of the certify report's runs (docs/certificate.md §5.4, §5.5). */
  certEstimator?: CertEstimator;
  /** --profile: per stage, where the time goes (phases, passes, tokens; src/cli/profile.ts). */
  profile: boolean;
  presets?: string[];
  seedsGiven: boolean;
  /** --sweep delta=…: run the δ-sweep protocol (deltaSweep.ts) on any tabular preset, not only delta-sweep. */
  sqrtDelta: boolean;
  /** The δ-sweep protocol with lr fixed (the negative control). */
  fixedLr: boolean;
  /** --export-recipe FILE: the settings as real runs (the SAT authors' YAML FILE, verl and TeamTR scripts, data, reward.py; bridge.ts). */
  exportRecipe?: string;
  /** --import-log FILE: a real run's metric log, or its generation dump (a file or the folder), parsed and summarised (bridge.ts). */
  importLog?: string;
  /** --hf S=id,M=id,L=id: the Hugging Face ids the zoo's sizes map to in a recipe. */
  hf: Partial<Record<'S' | 'M' | 'L', string>>;
  /** --agent-model J=DIR (repeatable): Hugging Face checkpoint folders seated as agents (hfSeat.ts). */
  agentModels: [number, string][];
  /** --agent-quant: storage of a seated checkpoint's matrices (default q8). */
  agentQuant: QuantKind;
  /** --agent-memory MiB: refuse a checkpoint whose estimate exceeds it (default 80 % of the machine's memory). */
  agentMemoryMiB?: number;
  /** --budget NAME: a named budget's settings (hfSeatLimits.ts BUDGETS) under the preset's, over which --set still wins. */
  budget?: BudgetName;
  /** --agent-onnx: an ONNX folder's seat is trainable (default) or frozen; --agent-onnx-file: which .onnx file. */
  agentOnnx: OnnxSeatMode;
  agentOnnxFile?: string;
}

const USAGE = `Usage: npm run sat -- [--preset NAME] [--stages N] [--seed S] [--set key=value …] [--json FILE]
                     [--compare v1,v2,… --seeds N] [--sweep key=v1,v2,… --seeds N [--sqrt-delta] [--fixed-lr]]
                     [--swap J=best|J=<model>|J=ONNX_DIR --swap-stage K [--stage0 DELTA0 | --no-stage0] [--swap-seat projection|student]]
                     [--certify-report [--presets a,b,…] [--seeds N] [--held-pairs N] [--cert-scope team|agents] [--cert-estimator truncated-is|mixture|paired]] [--profile] [--quiet] [--help]
                     [--export-recipe FILE [--hf S=org/model,M=…,L=…]] [--import-log FILE]
                     [--agent-model J=DIR … [--agent-quant q8|q4|f32] [--agent-memory MiB] [--budget real-size]
                      [--agent-onnx trainable|frozen] [--agent-onnx-file onnx/model_q4.onnx]]
--agent-model seats the Hugging Face Llama checkpoint in folder DIR as agent J (LoRA over its quantized base);
  an ONNX folder (onnx/model*.onnx) is seated trainable (mapped into our model) or frozen (run by onnxruntime-web).
--budget real-size: batch 2, group 4, 1 epoch, no geometry, 16 held-out and 8 certification episodes per agent —
  one stage of three 135M-class seats in minutes (docs/models.md "A real-size team"); --set overrides any of them.
Compare variants: an estimator (resample, truncated-is, happo, naive), simultaneous, or any key=value.
--sweep delta=… on delta-sweep (or with --sqrt-delta): only δ changes, lr ∝ √δ, one step, no backtracking;
  prints mean KL/δ, the violation rate and its exponent with a bootstrap CI over seeds (--fixed-lr: lr fixed).
Presets: ${PRESETS.map((p) => p.name).join(', ')}`;


/** Every flag of `npm run sat`, for node:util's parseArgs (read in order by flags.ts). */
const FLAGS = {
  preset: { type: 'string' }, stages: { type: 'string' }, seed: { type: 'string' }, set: { type: 'string', multiple: true }, json: { type: 'string' },
  compare: { type: 'string' }, seeds: { type: 'string' }, sweep: { type: 'string' },
  swap: { type: 'string' }, stage0: { type: 'string' }, 'swap-stage': { type: 'string' }, 'no-stage0': { type: 'boolean' }, 'swap-seat': { type: 'string' },
  quiet: { type: 'boolean' }, 'sqrt-delta': { type: 'boolean' }, 'fixed-lr': { type: 'boolean' },
  'certify-report': { type: 'boolean' }, 'held-pairs': { type: 'string' }, 'cert-scope': { type: 'string' }, 'cert-estimator': { type: 'string' }, presets: { type: 'string' }, profile: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
  'export-recipe': { type: 'string' }, hf: { type: 'string' }, 'import-log': { type: 'string' },
  'agent-model': { type: 'string', multiple: true }, 'agent-quant': { type: 'string' }, 'agent-memory': { type: 'string' },
  'agent-onnx': { type: 'string' }, 'agent-onnx-file': { type: 'string' }, budget: { type: 'string' },
} as const satisfies FlagSpec;

function readArgs(argv: string[]): Args {
  const a: Args = { preset: 'climbing', sets: {}, seeds: 1, swapSeat: 'projection', quiet: false, profile: false, certifyReport: false, seedsGiven: false, sqrtDelta: false, fixedLr: false, hf: {}, agentModels: [], agentQuant: 'q8', agentOnnx: 'trainable' };
  const list = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
  for (const { name, value } of readFlags(argv, FLAGS, (m) => new UsageError(m))) {
    // readFlags has checked that a value flag has its value and a switch has none.
    const v = value!;
    switch (name as keyof typeof FLAGS) {
      case 'preset': a.preset = v; break;
      case 'stages': a.sets.stages = v; break;
      case 'seed': a.sets.seed = v; break;
      case 'set': { const [k, x] = parseAssignment(v); a.sets[k] = x; break; }
      case 'json': a.json = v; break;
      case 'compare': a.compare = list(v); break;
      case 'seeds': {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1 || n > 1000) throw new UsageError(`--seeds must be an integer in [1, 1000], got ${v}`);
        a.seeds = n; a.seedsGiven = true; break;
      }
      case 'sweep': {
        const [k, x] = parseAssignment(v);
        a.sweep = { key: k, values: list(x) }; break;
      }
      // The swap flags are shorthands for the swap settings (swapAgent, swapTo, swapAt, swapStage0,
      // stage0Delta), so a swap from the command line is the same swap a share link replays.
      case 'swap': {
        const path = /^(\d+)=(.+)$/.exec(v);
        if (path && existsSync(path[2]!)) {
          a.sets.swapAgent = path[1]!;
          a.sets.swapTo = 'onnx';
          a.swapOnnx = path[2]!;
          break;
        }
        const m = /^(\d+)=(best|[A-Za-z]+-([A-Za-z0-9]+))$/.exec(v);
        if (!m) throw new UsageError(`--swap expects J=best (tabular: the best response to the team) or J=<task>-<size> (language: e.g. 1=arithmetic-M), got ${v}`);
        a.sets.swapAgent = m[1]!;
        a.sets.swapTo = m[2] === 'best' ? 'best' : m[3]!;
        if (m[2] !== 'best') a.swapModel = m[2]!;
        break;
      }
      case 'stage0': a.sets.stage0Delta = v; a.sets.swapStage0 = 'true'; break;
      case 'swap-stage': a.sets.swapAt = v; break;
      case 'no-stage0': a.sets.swapStage0 = 'false'; break;
      case 'swap-seat':
        if (v !== 'projection' && v !== 'student') throw new UsageError(`--swap-seat expects projection (sample from the Stage-0 projection itself) or student (from its distilled student), got ${v}`);
        a.swapSeat = v; break;
      case 'quiet': a.quiet = true; break;
      case 'sqrt-delta': a.sqrtDelta = true; break;
      case 'fixed-lr': a.fixedLr = true; break;
      case 'certify-report': a.certifyReport = true; break;
      case 'held-pairs': {
        const k = Number(v);
        if (!Number.isInteger(k) || k < 2) throw new UsageError(`--held-pairs expects a whole number of pairs ≥ 2, got ${v}`);
        a.heldPairs = k;
        break;
      }
      case 'cert-scope':
        if (v !== 'team' && v !== 'agents') throw new UsageError(`--cert-scope expects team (one bound on the whole team's step) or agents (the agents' steps added), got ${v}`);
        a.certScope = v; break;
      case 'cert-estimator':
        if (!(CERT_ESTIMATORS as readonly string[]).includes(v)) throw new UsageError(`--cert-estimator expects truncated-is (episodes of the starting team, the ratio truncated), mixture (pairs of one episode of each team, docs/certificate.md §5.4) or paired (one problem answered by both teams with the same random numbers, §5.5), got ${v}`);
        a.certEstimator = v as CertEstimator; break;
      case 'export-recipe': a.exportRecipe = v; break;
      case 'import-log': a.importLog = v; break;
      case 'hf':
        for (const item of list(v)) {
          const [size, id] = parseAssignment(item);
          if (size !== 'S' && size !== 'M' && size !== 'L') throw new UsageError(`--hf maps the zoo's sizes S, M and L to Hugging Face ids, got "${size}" in "${item}"`);
          a.hf[size] = id;
        }
        break;
      case 'agent-model': {
        const m = /^(\d+)=(.+)$/.exec(v);
        if (!m) throw new UsageError(`--agent-model expects J=DIR (agent index = a Hugging Face checkpoint folder), got ${v}`);
        a.agentModels.push([Number(m[1]), m[2]!]);
        break;
      }
      case 'agent-quant':
        if (!(QUANT_KINDS as readonly string[]).includes(v)) throw new UsageError(`--agent-quant expects one of ${QUANT_KINDS.join(', ')}, got ${v}`);
        a.agentQuant = v as QuantKind;
        break;
      case 'agent-memory': {
        const n = Number(v);
        if (!(n > 0 && Number.isFinite(n))) throw new UsageError(`--agent-memory expects a size in MiB > 0, got ${v}`);
        a.agentMemoryMiB = n;
        break;
      }
      case 'agent-onnx':
        if (!(ONNX_SEAT_MODES as readonly string[]).includes(v)) throw new UsageError(`--agent-onnx expects one of ${ONNX_SEAT_MODES.join(', ')}, got ${v}`);
        a.agentOnnx = v as OnnxSeatMode;
        break;
      case 'agent-onnx-file': a.agentOnnxFile = v; break;
      case 'budget':
        if (!Object.hasOwn(BUDGETS, v)) throw new UsageError(`--budget expects one of ${Object.keys(BUDGETS).join(', ')}, got ${v}`);
        a.budget = v as BudgetName;
        break;
      case 'profile': a.profile = true; break;
      case 'presets': a.presets = list(v); break;
      case 'help': printHelp(); process.exit(0);
    }
  }
  if (a.budget) for (const [k, x] of Object.entries(BUDGETS[a.budget])) a.sets[k] ??= String(x);
  return a;
}

function printHelp(): void {
  console.log(USAGE + '\n\nSettings (--set key=value):');
  for (const k of CONFIG_KEYS) {
    const f = CONFIG[k];
    console.log(`  ${k.padEnd(14)} default ${JSON.stringify(f.default).padEnd(12)} ${describeAllowed(f)}\n      ${f.doc}`);
  }
}

// ── formatting ──
const fmt = (x: number, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
const sci = (x: number) => (x === 0 ? '0' : x.toExponential(1));
const pad = (s: string, w: number) => s.padStart(w);

/** Width of the ΔJ column: room for "−0.004 ± 0.030" where J is a held-out estimate. */
const djWidth = (noisy: boolean) => (noisy ? 17 : 9);

function stageHeader(n: number, noisy = false): string {
  const per = (name: string) => Array.from({ length: n }, (_, j) => `${name}${j}`.padStart(8)).join('');
  return `${'stage'.padStart(5)}${'J'.padStart(9)}${(noisy ? 'ΔJ held-out' : 'ΔJ').padStart(djWidth(noisy))}${'lower'.padStart(10)}${'held'.padStart(5)}${'cert'.padStart(5)}${'ESS'.padStart(7)}${'σ'.padStart(8)}${per('klq')}${per('viol')}${per('bt')}`;
}

/** The held column's glyphs and the cert column's ✓: the verdicts' own (src/sat/verdicts.ts). */
const HELD_MARK: Record<HeldState, string> = { held: VERDICTS.held.glyph, 'not held': VERDICTS['not held'].glyph, undecided: VERDICTS.undecided.glyph, unchecked: VERDICTS.unchecked.glyph };

/** The table's legend: every mark, what a ✓ proves, and the ± of a held-out ΔJ. */
function stageLegend(noisy: boolean, deltaConf: number, evalEpisodes: number): string {
  const marks = (['held', 'not held', 'undecided', 'unchecked'] as const).map((v) => `${VERDICTS[v].glyph} ${VERDICTS[v].words}`).join('   ');
  const level = `${Math.round(100 * (1 - deltaConf))} %`;
  return `held: ${marks} (is the bound at or below the real ΔJ?)\n` +
    `cert: ${VERDICTS.certified.glyph} = ${noisy ? 'J on the training problems' : 'J'} rose by at least "lower" (${level}, for that stage)` +
    (noisy ? `\nΔJ held-out: the change of J on ${evalEpisodes} held-out problems, ± the held-out J's 95 % interval — the noise a ✓ can sit beside` : '');
}

function stageRow(s: StageRecord, n: number): string {
  const m = s.metrics;
  const per = (key: string, f: (x: number) => string) => Array.from({ length: n }, (_, j) => pad(f(m[`agent/${j}/${key}`] as number), 8)).join('');
  return (
    pad(String(s.stage), 5) + pad(fmt(s.jAfter), 9) +
    (s.evaluation.exact ? pad(fmt(m['team/dJ'] as number), 9) : pad(withNoise(m['team/dJ'] as number, s.evaluation.ci), djWidth(true))) + pad(fmt(m['cert/lower'] as number), 10) +
    pad(HELD_MARK[s.held?.state ?? (m['cert/held'] === 1 ? 'held' : 'not held')], 5) + pad(m['cert/certified'] === 1 ? VERDICTS.certified.glyph : '·', 5) +
    pad(Number.isFinite(m['cert/ess'] as number) ? fmt(m['cert/ess'] as number, 0) : '—', 7) + pad(s.order.join(''), 8) + per('kl_q', sci) + per('viol_rate', (x) => fmt(x, 2)) + per('backtracks', (x) => String(x))
  );
}

function table(header: string[], rows: string[][]): string {
  const w = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (r: string[]) => r.map((x, c) => (c === 0 ? x.padEnd(w[c]!) : x.padStart(w[c]!))).join('  ');
  return [line(header), w.map((x) => '─'.repeat(x)).join('  '), ...rows.map(line)].join('\n');
}

/** Fraction of stages where the team got worse (ΔJ < 0 beyond rounding). */
function monotonicityViolation(stages: readonly StageRecord[]): number {
  return stages.filter((s) => (s.metrics['team/dJ'] as number) < -1e-9).length / Math.max(1, stages.length);
}

function variantSettings(v: string): Record<string, string> {
  if (v.includes('=')) {
    const [k, val] = parseAssignment(v);
    return { [k]: val };
  }
  if (v === 'simultaneous') return { scheme: 'simultaneous' };
  return { estimator: v, scheme: 'sequential' };
}

/** The --agent-model seats of a single run (with their quantization, memory limit and progress log). */
interface HfSeats {
  readonly seats: readonly [number, string][];
  readonly quant: QuantKind;
  readonly limitBytes?: number;
  readonly log: (line: string) => void;
  readonly onnx?: { readonly mode: OnnxSeatMode; readonly file?: string };
}

/**
 * The run's experiment, and its GPU devices when backend = webgpu (a language team on one device
 * per agent, gpu.ts; 'auto' stays on the CPU here, as Node has no browser WebGPU to prefer).
 */
async function openExperiment(cfg: Config, hf?: HfSeats): Promise<{ exp: Experiment; gpu: CliGpu | null }> {
  if (!isLlmTask(cfg.task)) return { exp: createTabularExperiment(cfg), gpu: null };
  if (cfg.backend === 'webgpu') {
    if (hf && hf.seats.length > 0) throw new UsageError('--agent-model with backend = webgpu: the command line seats a checkpoint on the CPU backend only (the page runs it on WebGPU); drop one of the two');
    const gpu = cliGpuBackends();
    try {
      const exp = await createLlmExperiment(cfg, loadFromDisk, { backendOf: (i) => gpu.backendOf(i) });
      return { exp, gpu };
    } catch (e) {
      gpu.release();
      throw e;
    }
  }
  let exp: Experiment = await createLlmExperiment(cfg, loadFromDisk);
  for (const [j, dir] of hf?.seats ?? []) exp = await seatHfAgent(exp, cfg, j, dir, { quant: hf!.quant, limitBytes: hf!.limitBytes, log: hf!.log, onnx: hf!.onnx });
  return { exp, gpu: null };
}

/**
 * How a language team seats its configured swap (experiment.ts calls it before stage swapAt):
 * lmSwap.ts `configuredLmSwap` with the model read from disk; `log` gets the full report.
 */
function lmSwapSeat(seat: Args['swapSeat'], cfg: Config, log?: (line: string) => void, load: Parameters<typeof configuredLmSwap>[0] = loadFromDisk): NonNullable<Experiment['swapModel']> {
  return configuredLmSwap(load, seat, (r) => {
    const q = (x: { q50: number; q90: number; q99: number; aboveDelta: number }) => `${sci(x.q50)}/${sci(x.q90)}/${sci(x.q99)} (${fmt(100 * x.aboveDelta, 1)} % > δ)`;
    const seats = { projection: 'the projection π_new samples (per token, λ(s) solved at sampling time)', student: 'the distilled student samples', raw: 'the new model samples as it is' };
    log?.(
      `swap before stage ${cfg.swapAt}: agent ${r.agent} ← ${r.model}, Stage-0 ${r.stage0 ? `on (δ0 = ${cfg.stage0Delta}, distilled: KL(π_new‖π_θ) = ${sci(r.distillKl)})` : 'off'}; ${seats[r.seat]}; ${r.states} token states\n` +
        `  held-out J ${fmt(r.jBefore)} → ${fmt(r.jAfter)}\n` +
        `  KL to π_cur q50/q90/q99: π_pre ${q(r.klPre)}; projected ${q(r.klProjected)}; student ${q(r.klStudent)}; seated ${q(r.klSeated)}\n` +
        (r.stage0 ? `  hand-over KL(π_θ‖π_new) of the distilled student q50/q90/q99: ${q(r.handover)}\n` : '') +
        `  λ(s) histogram [0,1e-3,1e-2,0.1,1,10,∞): ${lambdaHistogram(r.lambdas).join(' ')}`,
    );
  }, load !== loadFromDisk);
}

/** The configured swap of a tabular team, in one line (the stage record carries the numbers). */
function tabularSwapLine(s: StageRecord, cfg: Config): string {
  const w = s.swap!;
  return (
    `swap before stage ${s.stage}: agent ${w.agent} ← ${w.incoming}, Stage-0 ${w.stage0 ? `on (δ0 = ${cfg.stage0Delta})` : 'off'}; ` +
    `J ${fmt(w.jBefore)} → ${fmt(w.jAfter)}; KL to π_cur q50/q90/q99 = ${sci(w.klQuantiles.q50)}/${sci(w.klQuantiles.q90)}/${sci(w.klQuantiles.q99)}; ` +
    `λ(s) histogram [0,1e-3,1e-2,0.1,1,10,∞): ${w.lambdaHist.join(' ')}`
  );
}

/** Seconds between two progress lines of a language stage (a stage shorter than this prints none). */
const PROGRESS_EVERY_S = 5;

/**
 * A language stage's progress on stderr (src/sat/stageProgress.ts): what runs, the share of the
 * stage's work done and the time left at the pace so far, at most one line every
 * PROGRESS_EVERY_S seconds. `inner`: the --profile table's profiler, told every phase too.
 */
function followStages(exp: Experiment, inner?: StageProfiler): StageProgress {
  let stageStart = performance.now();
  let last = stageStart;
  let stage = 0;
  const p = new StageProgress(exp.cfg, exp.team.length, exp.lastEval !== undefined, (r) => {
    const t = performance.now();
    if (r.stage !== stage) {
      stage = r.stage;
      stageStart = last = t;
    }
    if (t - last < PROGRESS_EVERY_S * 1000 || r.done <= 0) return;
    last = t;
    const left = ((t - stageStart) / r.done) * (r.total - r.done) / 1000;
    process.stderr.write(`  stage ${r.stage}: ${Math.round((100 * r.done) / r.total)} % of its work done, now ${r.what}; about ${left < 90 ? `${Math.max(1, Math.round(left))} s` : `${Math.round(left / 60)} min`} left\n`);
  }, () => null, inner);
  exp.profiler = p;
  return p;
}

async function runOne(
  cfg: Config, onStage?: (s: StageRecord, e: Experiment) => void,
  opts: { seat?: Args['swapSeat']; log?: (line: string) => void; profile?: boolean; hf?: HfSeats; heldPairs?: number; certScope?: CertScope; certEstimator?: CertEstimator; swapOnnx?: string } = {},
): Promise<{ exp: Experiment; stages: StageRecord[] }> {
  const { exp, gpu } = await openExperiment(cfg, opts.hf);
  // Language teams: check every stage's bound against a CRN estimate of its ΔJ (docs/certificate.md §12).
  if (opts.heldPairs) exp.env.heldPairs = opts.heldPairs;
  if (opts.certScope) exp.env.certScope = opts.certScope;
  if (opts.certEstimator) exp.env.certEstimator = opts.certEstimator;
  if (gpu) opts.log?.(`backend webgpu, one device per agent:\n  ${gpu.adapters.join('\n  ')}`);
  if (cfg.swapAgent >= 0 && cfg.swapTo === 'onnx' && !opts.swapOnnx) throw new UsageError('swapTo = onnx swaps onto an ONNX folder: name it with --swap J=DIR');
  const onnx = opts.swapOnnx ? await onnxSwapLoader(exp, cfg, cfg.swapAgent, opts.swapOnnx, { quant: opts.hf?.quant ?? 'q8', limitBytes: opts.hf?.limitBytes, log: opts.log ?? (() => {}) }) : null;
  if (isLlmTask(cfg.task)) exp.swapModel = lmSwapSeat(opts.seat ?? 'projection', cfg, opts.log, onnx ? () => onnx() : loadFromDisk);
  const profiling = opts.profile ? attachProfiler(exp) : null;
  const progress = isLlmTask(cfg.task) ? followStages(exp, profiling?.profiler) : null;
  let gpuCounts = gpu?.counts() ?? null;
  let cpuAtStage = process.cpuUsage();
  const stages = await runStages(exp, cfg.stages, (s) => {
    progress?.begin(s.stage + 1, true);
    if (s.swap && !isLlmTask(cfg.task)) opts.log?.(tabularSwapLine(s, cfg));
    onStage?.(s, exp);
    if (gpu) {
      const c = gpu.counts();
      opts.log?.(`  stage ${s.stage} on the GPU: ${c.dispatches - gpuCounts!.dispatches} dispatches in ${c.submissions - gpuCounts!.submissions} command submissions (all agents)`);
      gpuCounts = c;
    }
    if (profiling) {
      opts.log?.(profileTable(s, profiling));
      // CPU time of every thread of this process over the stage (bench:page --lm compares it with the page's).
      const cpu = process.cpuUsage(cpuAtStage);
      cpuAtStage = process.cpuUsage();
      opts.log?.(`stage ${s.stage} cpu ${Math.round((cpu.user + cpu.system) / 1000)} ms (every thread of this process)`);
      profiling.profiler.reset();
    }
    const seat = s.swap ? exp.team[s.swap.agent] : undefined;
    if (seat instanceof ProjectedLmAgent) {
      if (seat.lastDistil.states > 0) opts.log?.(`  hand-over step: the student was distilled on its batch's ${seat.lastDistil.states} token states (sampled by the projection), KL(π_new‖π_θ) = ${sci(seat.lastDistil.kl)}`);
      opts.log?.(seat.sampler === 'student'
        ? `  hand-over: agent ${s.swap!.agent}'s first update was accepted — its student (the distilled ${s.swap!.incoming}) holds the seat from now on`
        : `  hand-over: agent ${s.swap!.agent}'s update was not accepted — the projection keeps sampling; the next stage tries again`);
    }
  }).catch((e: unknown) => {
    // A call on a lost device fails with whatever the backend saw; the loss is the news.
    const lost = gpu?.lost();
    throw lost ? new SatError('backend', `${lost}; the run stopped after ${exp.stagesDone} stage(s). ${e instanceof Error ? e.message : String(e)}`) : e;
  }).finally(() => gpu?.release());
  return { exp, stages };
}

async function main(): Promise<void> {
  const args = readArgs(process.argv.slice(2));
  const base = presetConfig(args.preset, args.sets);
  if (args.swapModel && args.swapModel !== `${base.task}-${base.swapTo}`) {
    throw new UsageError(`--swap names ${args.swapModel}, but the task is ${base.task}: swap in one of its own shipped models, e.g. ${base.task}-M`);
  }
  const progress = (msg: string) => {
    if (!args.quiet && process.stderr.isTTY) process.stderr.write(`\r${msg}\x1b[K`);
  };
  if (args.agentModels.length > 0) {
    if (!isLlmTask(base.task)) throw new UsageError(`--agent-model seats a language model, but preset ${args.preset} is the tabular game ${base.task}`);
    if (args.compare || args.sweep || args.certifyReport || args.exportRecipe) throw new UsageError('--agent-model works with a single run (not with --compare, --sweep, --certify-report or --export-recipe)');
  }

  if (args.certifyReport) {
    await printCertifyReport(args, progress);
    return;
  }

  if (args.exportRecipe) {
    exportRecipe(args.exportRecipe, base, args.hf);
    return;
  }

  if (args.importLog) {
    await printRunLog(args.importLog);
    return;
  }

  if (args.compare) {
    const rows: string[][] = [];
    const json: Record<string, unknown> = {};
    for (const v of args.compare) {
      const finals: number[] = [];
      const viol: number[] = [];
      const held: number[] = [];
      for (let s = 0; s < args.seeds; s++) {
        progress(`${v}: seed ${s + 1}/${args.seeds}`);
        const cfg = presetConfig(args.preset, { ...args.sets, ...variantSettings(v), seed: String(base.seed + s) });
        const { stages } = await runOne(cfg);
        finals.push(stages.at(-1)!.jAfter);
        viol.push(monotonicityViolation(stages));
        held.push(mean(stages.map((x) => x.metrics['cert/held'] as number)));
      }
      const ci = meanCI(finals);
      rows.push([v, `${fmt(ci.mean)} ± ${fmt(ci.halfWidth)}`, `${fmt(Math.min(...finals))}..${fmt(Math.max(...finals))}`, fmt(mean(viol)), fmt(mean(held))]);
      json[v] = { finalJ: finals, monotonicityViolation: viol, certHeld: held };
    }
    progress('');
    console.log(`preset ${args.preset}, ${base.stages} stages, seeds ${base.seed}..${base.seed + args.seeds - 1}; final J as mean ± 95% CI (Student t)\n`);
    console.log(table(['variant', 'final J', 'range', 'ΔJ<0 rate', 'cert held'], rows));
    if (args.json) writeFileSync(args.json, JSON.stringify({ preset: args.preset, settings: args.sets, seeds: args.seeds, variants: json }, null, 1));
    return;
  }

  if (args.sweep && args.sweep.key === 'delta' && (args.preset === 'delta-sweep' || args.sqrtDelta)) {
    await printDeltaSweep(args, base, progress);
    return;
  }
  if (args.fixedLr || args.sqrtDelta) throw new UsageError('--sqrt-delta and --fixed-lr go with --sweep delta=… (the δ-sweep protocol)');

  if (args.sweep) {
    const { key, values } = args.sweep;
    const xs: number[] = [];
    const vs: number[] = [];
    const ms: number[] = [];
    const rows: string[][] = [];
    for (const val of values) {
      const viol: number[] = [];
      const mono: number[] = [];
      for (let s = 0; s < args.seeds; s++) {
        progress(`${key}=${val}: seed ${s + 1}/${args.seeds}`);
        const cfg = presetConfig(args.preset, { ...args.sets, [key]: val, seed: String(base.seed + s) });
        const { stages } = await runOne(cfg);
        for (const st of stages) for (const step of st.steps) viol.push(step.check.violRate);
        mono.push(monotonicityViolation(stages));
      }
      const v = mean(viol);
      const m = mean(mono);
      xs.push(Number(val));
      vs.push(v);
      ms.push(m);
      rows.push([`${key}=${val}`, fmt(v, 4), fmt(m, 3)]);
    }
    progress('');
    console.log(`preset ${args.preset}, ${base.stages} stages × ${args.seeds} seeds per value\n`);
    console.log(table([key, 'KL viol rate', 'ΔJ<0 rate'], rows));
    const fit = (ys: number[], what: string) => {
      const usable = xs.filter((x, i) => x > 0 && ys[i]! > 0).length;
      if (usable < 2) {
        console.log(`\nno fit for ${what}: only ${usable} value(s) of ${key} gave a rate > 0 (a power law needs two)`);
        return null;
      }
      const f = fitPowerLaw(xs, ys);
      console.log(`\nfit ${what} ≈ c·${key}^p: p = ${fmt(f.p)}, c = ${fmt(f.c, 4)}, r² = ${fmt(f.r2)} over ${f.used} points with rate > 0`);
      return f;
    };
    const fv = fit(vs, 'KL violation rate');
    const fm = fit(ms, 'ΔJ<0 rate');
    if (args.json) writeFileSync(args.json, JSON.stringify({ preset: args.preset, key, values: xs, violation: vs, monotonicity: ms, fitViolation: fv, fitMonotonicity: fm }, null, 1));
    return;
  }

  // A single run: one row per stage.
  const cfg = base;
  const n = cfg.agents;
  console.log(`preset ${args.preset}: ${JSON.stringify(diffConfig(cfg))}`);
  let printedHeader = false;
  const { exp, stages } = await runOne(
    cfg,
    (s, e) => {
      if (!printedHeader) {
        const how = isLlmTask(cfg.task) ? `held-out estimate over ${cfg.evalEpisodes} problems` : 'exact';
        console.log(`J at start ${fmt(e.j0)} (${how}); certificate form ${cfg.certForm}, A_max ${e.aMax}, H ${e.env.horizon}\n`);
        console.log(stageHeader(n, isLlmTask(cfg.task)));
        printedHeader = true;
      }
      console.log(stageRow(s, n));
    },
    {
      seat: args.swapSeat, log: (line) => console.log(line), profile: args.profile, swapOnnx: args.swapOnnx,
      hf: args.agentModels.length > 0 ? { seats: args.agentModels, quant: args.agentQuant, limitBytes: args.agentMemoryMiB !== undefined ? args.agentMemoryMiB * 2 ** 20 : undefined, log: (line) => console.error(escapeLines(line)), onnx: { mode: args.agentOnnx, file: args.agentOnnxFile } } : undefined,
    },
  );
  const certified = mean(stages.map((s) => s.metrics['cert/certified'] as number));
  const checked = stages.filter((s) => s.held === undefined || s.held.state !== 'unchecked');
  const heldWords = checked.length === 0
    ? 'not checked (held-out J is too noisy to test a bound; --certify-report checks it with common random numbers)'
    : `held in ${fmt(checked.filter((s) => s.metrics['cert/held'] === 1).length / checked.length, 2)} of ${checked.length < stages.length ? 'the checked ' : ''}stages`;
  console.log(`\n${stageLegend(isLlmTask(cfg.task), cfg.deltaConf, cfg.evalEpisodes)}`);
  console.log(`\nfinal J ${fmt(stages.at(-1)!.jAfter)}; ΔJ<0 in ${fmt(monotonicityViolation(stages), 2)} of stages; certificate ${heldWords} and certified an improvement in ${fmt(certified, 2)} of stages (${perStageNote(stages.length, cfg.deltaConf)})`);
  if (args.json) {
    const summary: RunSummary = { preset: args.preset, config: cfg, j0: exp.j0, stages: stages.map((s) => s.metrics) };
    parse(runSummarySchema, summary); // throws only on a bug: the summary is what the run recorded
    writeFileSync(args.json, JSON.stringify(summary, null, 1));
    console.log(`metrics written to ${args.json}`);
  }
}

/**
 * --sweep delta=… under the δ-sweep protocol (src/studies/deltaSweep.ts): one row per δ and the fitted
 * exponent with its bootstrap interval; --json writes the whole result.
 */
async function printDeltaSweep(args: Args, base: Config, progress: (msg: string) => void): Promise<void> {
  if (isLlmTask(base.task)) throw new UsageError('the δ-sweep protocol runs tabular games only');
  const deltas = args.sweep!.values.map((v) => {
    const d = Number(v);
    if (!(d >= CONFIG.delta.min && d <= CONFIG.delta.max)) throw new UsageError(`--sweep delta: "${v}" is not a radius in [${CONFIG.delta.min}, ${CONFIG.delta.max}]`);
    return d;
  });
  if (new Set(deltas).size < 2) throw new UsageError('--sweep delta=… needs at least two different radii to fit an exponent');
  const nSeeds = args.seedsGiven ? args.seeds : SWEEP_SEEDS;
  const seeds = Array.from({ length: nSeeds }, (_, i) => base.seed + i);
  const lrScaling = args.fixedLr ? 'fixed' : 'sqrt';
  const r = (await deltaSweep({ base, deltas, seeds, stages: base.stages, lrScaling, onProgress: (done, total, what) => progress(`${what} (${done}/${total})`) }))!;
  progress('');
  const pr = r.protocol;
  console.log(
    `preset ${args.preset}: ${pr.task}, ${pr.agents} agents × ${pr.actions} actions (${pr.states} local states), ${pr.stages} stages × ${nSeeds} seeds (${seeds[0]}..${seeds.at(-1)}) per δ
` +
      `only δ changes: ${lrScaling === 'sqrt' ? `lr = ${pr.lrRef}·√(δ/${pr.deltaRef})` : `lr fixed at ${pr.lrRef} (negative control)`}, epochs 1, maxBacktracks 0, onExhausted keep, betaAdapt off (β = ${base.beta})
`,
  );
  const rows = r.points.map((p) => [
    String(p.delta), fmt(p.lr, 4), `${fmt(p.klOverDelta)} ± ${fmt(p.klOverDeltaSd)}`, fmt(p.klOverDeltaQ50), fmt(p.klOverDeltaQ90),
    fmt(p.violRate, 4), `${fmt(Math.min(...p.violRateBySeed), 3)}..${fmt(Math.max(...p.violRateBySeed), 3)}`, String(p.visits),
  ]);
  console.log(table(['δ', 'lr', 'mean KL/δ ± sd', 'KL/δ q50', 'KL/δ q90', 'viol rate', 'per seed', 'visits'], rows));
  console.log(`
scaling check: mean KL/δ from ${fmt(Math.min(...r.points.map((p) => p.klOverDelta)))} to ${fmt(Math.max(...r.points.map((p) => p.klOverDelta)))} across δ (max/min ${fmt(r.klSpread, 2)}; 1 = the step scaled exactly with the radius)`);
  if (r.fit) {
    const ci = r.ci ? `, 95% CI [${fmt(r.ci.lo)}, ${fmt(r.ci.hi)}] (bootstrap over seeds, ${r.ci.used} of ${r.ci.resamples} resamples fitted)` : ' (one seed: no interval)';
    console.log(`fit violation rate ≈ c·δ^p: p = ${fmt(r.fit.p)}${ci}, c = ${fmt(r.fit.c, 4)}, r² = ${fmt(r.fit.r2)} over ${r.fit.used} δ with rate > 0`);
    const half = r.ci ? (r.ci.lo <= 0.5 && 0.5 <= r.ci.hi ? 'inside the interval' : 'outside the interval') : 'no interval to compare';
    console.log(`the paper's √δ law is p = 0.5: ${half}`);
  } else {
    console.log(`no fit: fewer than two δ gave a violation rate > 0 (a power law needs two)`);
  }
  if (args.json) writeFileSync(args.json, JSON.stringify({ preset: args.preset, settings: args.sets, ...r }, null, 1));
}

/** The tabular presets whose certificate the report measures by default (the swap and sweep presets excluded). */
const CERT_REPORT_TABULAR = ['climbing', 'climbing2', 'penalty', 'relay', 'router', 'random-matrix'];

/**
 * --certify-report: per preset, at its own settings, over seeds 1..N (5 by default; language presets
 * 3), the share of improving stages the certificate proved and how tight it was (certReport.ts).
 */
async function printCertifyReport(args: Args, progress: (msg: string) => void): Promise<void> {
  const names = args.presets ?? CERT_REPORT_TABULAR;
  const rows: string[][] = [];
  const out: CertReportRow[] = [];
  for (const name of names) {
    const llm = PRESETS.find((p) => p.name === name)?.kind === 'llm';
    const seeds = args.seedsGiven ? args.seeds : llm ? 3 : 5;
    const row = await certReport(name, (seed) => presetConfig(name, { ...args.sets, seed: String(seed) }), seeds, async (cfg) => {
      progress(`${name}: seed ${cfg.seed}/${seeds}`);
      const onStage = (s: StageRecord) => progress(`${name}: seed ${cfg.seed}/${seeds}, stage ${s.stage}/${cfg.stages}`);
      return (await runOne(cfg, onStage, { heldPairs: llm ? (args.heldPairs ?? 2048) : undefined, certScope: args.certScope, certEstimator: args.certEstimator })).stages;
    });
    out.push(row);
    rows.push([
      name, `${row.seeds}×${row.stages / row.seeds}`, String(row.improved), `${row.certified} (${fmt(100 * row.certifiedFraction, 0)} %)`,
      fmt(row.tightness, 2), fmt(row.provedShare, 2), fmt(row.holdRate, 3), String(row.notHeld), String(row.undecided), String(row.unchecked), String(row.falseCertified),
      fmt(row.certEpisodesPerStage, 0), Number.isFinite(row.essMedian) ? fmt(row.essMedian, 0) : '—', Number.isFinite(row.essMedian) ? fmt(row.truncCostMean, 4) : '—',
      fmt(row.msPerStage, 0), fmt(row.msCertPerStage, 0), `${fmt(100 * row.certTimeShare, 0)} %`,
    ]);
  }
  progress('');
  console.log('Does the certificate certify? Among the stages whose ΔJ > 0 (exact for tabular games; for language teams a common-random-numbers estimate, ' +
    `${args.heldPairs ?? 2048} pairs a stage, on the distribution the bound is about):`);
  console.log('certified = lower bound > 0; tightness = Σ lower / Σ ΔJ; proved = Σ max(lower, 0) / Σ ΔJ; held = share of all stages where lower ≤ ΔJ ' +
    '(language: lower ≤ estimate − 2 se; not held = above estimate + 2 se; undecided = within 2 se; the counts are stages); ESS = median effective sample size of the team ratio r̄; trunc = mean cost of min(r̄, c).\n');
  const mark = (v: keyof typeof VERDICTS) => `${VERDICTS[v].glyph} ${VERDICTS[v].words}`;
  console.log(table(['preset', 'seeds×stages', 'ΔJ>0', mark('certified'), 'tightness', 'proved', mark('held'), mark('not held'), mark('undecided'), mark('unchecked'), 'false cert', 'cert ep/stage', 'ESS', 'trunc', 'ms/stage', 'cert ms', 'cert time'], rows));
  console.log('\nms/stage excludes the CRN check (it is a test of the bound, not part of training or certifying).');
  if (names.some((n) => PRESETS.find((p) => p.name === n)?.kind === 'llm')) {
    console.log(args.certEstimator === 'mixture'
      ? 'Language teams: the mixture estimator, pairs of one episode of each team (docs/certificate.md §5.4); ESS and trunc are those of the first round\u2019s starting-team episodes.'
      : args.certEstimator === 'paired'
        ? 'Language teams: the paired estimator, one problem answered by each team with the same random numbers (docs/certificate.md §5.5); ESS and trunc are those of the first round\u2019s starting-team episodes.'
        : 'Language teams: the truncated estimator, episodes of the starting team (docs/certificate.md §5.1).');
  }
  const decades = out.flatMap((row) => row.decades.map((d) => [
    row.preset, `${d.from}–${d.to}`, String(d.improved), `${d.certified} (${fmt(d.improved > 0 ? (100 * d.certified) / d.improved : Number.NaN, 0)} %)`,
    fmt(d.tightness, 2), fmt(d.episodesMean, 0), fmt(d.episodesMax, 0), fmt(d.secondsPerStage, 1),
  ]));
  console.log('\nPer decade of stages, every seed (certification rounds stop when the bound clears 0, when it cannot, or at the stage\u2019s budget; docs/certificate.md §5.3):\n');
  console.log(table(['preset', 'stages', 'ΔJ>0', mark('certified'), 'Σlower/ΣΔJ', 'cert ep/stage', 'largest', 's/stage'], decades));
  if (args.json) writeFileSync(args.json, JSON.stringify({ settings: args.sets, rows: out }, null, 1));
}

runCommand(main, USAGE);
