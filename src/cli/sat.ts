/**
 * `npm run sat` — run SAT on a team (tabular or language models) from the command line.
 *
 *   npm run sat -- --preset climbing --stages 20 --seed 1 [--set key=value …] [--json FILE]
 *   npm run sat -- --preset climbing --compare resample,naive,simultaneous --seeds 10
 *   npm run sat -- --preset delta-sweep --sweep delta=0.001,0.003,0.01,0.03,0.1 --seeds 5
 *   npm run sat -- --preset relay --swap 1=best --swap-stage 10 [--no-stage0]
 *   npm run sat -- --preset arith-pnp --swap 1=arithmetic-M --swap-stage 3 [--stage0 0.1 | --no-stage0] [--swap-seat student]
 *   npm run sat -- --help          (every setting, its default, range and meaning)
 *
 * The same metric keys as the JSON export and the charts (SAT.md §9). Errors in the settings exit
 * with status 2 and a message naming the key, the value and what is allowed.
 *
 * Not here: any algorithm (src/sat) — this file parses flags and prints tables.
 */
import { writeFileSync } from 'node:fs';
import { SatError } from '../core/errors';
import { fitPowerLaw, mean, meanCI } from '../core/stats';
import { CONFIG, CONFIG_KEYS, type Config, describeAllowed, diffFromDefaults, parseAssignment } from '../sat/config';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isLlmTask } from '../sat/config';
import { createExperiment, createLlmExperiment, runStages, type Experiment, type LlmExperiment } from '../sat/experiment';
import { swapLmAgent } from '../sat/lmSwap';
import { ProjectedLmAgent } from '../sat/projectedAgent';
import { lambdaHistogram } from '../sat/stage0';
import { loadModel } from '../model/weights';
import { PRESETS, presetConfig } from '../sat/presets';
import type { StageRecord } from '../sat/stage';

interface Args {
  preset: string;
  sets: Record<string, string>;
  json?: string;
  compare?: string[];
  sweep?: { key: string; values: string[] };
  seeds: number;
  /** The model named by --swap J=<task>-<size> (checked against the task once the config is known). */
  swapModel?: string;
  /** Language swaps with Stage-0: the projection samples at once (default), or the distilled student. */
  swapSeat: 'projection' | 'student';
  quiet: boolean;
}

const USAGE = `Usage: npm run sat -- [--preset NAME] [--stages N] [--seed S] [--set key=value …] [--json FILE]
                     [--compare v1,v2,… --seeds N] [--sweep key=v1,v2,… --seeds N]
                     [--swap J=best|J=<model> --swap-stage K [--stage0 DELTA0 | --no-stage0] [--swap-seat projection|student]] [--quiet] [--help]
Compare variants: an estimator (resample, truncated-is, happo, naive), simultaneous, or any key=value.
Presets: ${PRESETS.map((p) => p.name).join(', ')}`;

class UsageError extends Error {}

function parseArgs(argv: string[]): Args {
  const a: Args = { preset: 'climbing', sets: {}, seeds: 1, swapSeat: 'projection', quiet: false };
  const need = (i: number, flag: string): string => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new UsageError(`${flag} needs a value`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i]!;
    switch (f) {
      case '--preset': a.preset = need(i, f); i++; break;
      case '--stages': a.sets.stages = need(i, f); i++; break;
      case '--seed': a.sets.seed = need(i, f); i++; break;
      case '--set': { const [k, v] = parseAssignment(need(i, f)); a.sets[k] = v; i++; break; }
      case '--json': a.json = need(i, f); i++; break;
      case '--compare': a.compare = need(i, f).split(',').map((s) => s.trim()).filter(Boolean); i++; break;
      case '--seeds': {
        const n = Number(need(i, f));
        if (!Number.isInteger(n) || n < 1 || n > 1000) throw new UsageError(`--seeds must be an integer in [1, 1000], got ${argv[i + 1]}`);
        a.seeds = n; i++; break;
      }
      case '--sweep': {
        const [k, v] = parseAssignment(need(i, f));
        a.sweep = { key: k, values: v.split(',').map((s) => s.trim()).filter(Boolean) }; i++; break;
      }
      // The swap flags are shorthands for the swap settings (swapAgent, swapTo, swapAt, swapStage0,
      // stage0Delta), so a swap from the command line is the same swap a share link replays.
      case '--swap': {
        const m = /^(\d+)=(best|[A-Za-z]+-([A-Za-z0-9]+))$/.exec(need(i, f));
        if (!m) throw new UsageError(`--swap expects J=best (tabular: the best response to the team) or J=<task>-<size> (language: e.g. 1=arithmetic-M), got ${argv[i + 1]}`);
        a.sets.swapAgent = m[1]!;
        a.sets.swapTo = m[2] === 'best' ? 'best' : m[3]!;
        if (m[2] !== 'best') a.swapModel = m[2]!;
        i++; break;
      }
      case '--stage0': a.sets.stage0Delta = need(i, f); a.sets.swapStage0 = 'true'; i++; break;
      case '--swap-stage': a.sets.swapAt = need(i, f); i++; break;
      case '--no-stage0': a.sets.swapStage0 = 'false'; break;
      case '--swap-seat': {
        const v = need(i, f);
        if (v !== 'projection' && v !== 'student') throw new UsageError(`--swap-seat expects projection (sample from the Stage-0 projection itself) or student (from its distilled student), got ${v}`);
        a.swapSeat = v; i++; break;
      }
      case '--quiet': a.quiet = true; break;
      case '--help': case '-h': printHelp(); process.exit(0);
      default: throw new UsageError(`Unknown flag ${f}`);
    }
  }
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

function stageHeader(n: number): string {
  const per = (name: string) => Array.from({ length: n }, (_, j) => `${name}${j}`.padStart(8)).join('');
  return `${'stage'.padStart(5)}${'J'.padStart(9)}${'ΔJ'.padStart(9)}${'lower'.padStart(10)}${'held'.padStart(5)}${'σ'.padStart(8)}${per('klq')}${per('viol')}${per('bt')}`;
}

function stageRow(s: StageRecord, n: number): string {
  const m = s.metrics;
  const per = (key: string, f: (x: number) => string) => Array.from({ length: n }, (_, j) => pad(f(m[`agent/${j}/${key}`] as number), 8)).join('');
  return (
    pad(String(s.stage), 5) + pad(fmt(s.jAfter), 9) + pad(fmt(m['team/dJ'] as number), 9) + pad(fmt(m['cert/lower'] as number), 10) +
    pad(m['cert/held'] === 1 ? '●' : '○', 5) + pad(s.order.join(''), 8) + per('kl_q', sci) + per('viol_rate', (x) => fmt(x, 2)) + per('backtracks', (x) => String(x))
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

/** Shipped models are read from public/models/<name>.safetensors. */
async function loadFromDisk(name: string): Promise<Uint8Array> {
  const file = join('public', 'models', `${name}.safetensors`);
  try {
    return new Uint8Array(await readFile(file));
  } catch {
    throw new SatError('model', `Model file ${file} is missing: run \`npm run pretrain -- --task ${name.split('-')[0]} --size ${name.split('-')[1]}\` to build it.`);
  }
}

async function openExperiment(cfg: Config): Promise<Experiment> {
  if (isLlmTask(cfg.task) && cfg.backend === 'webgpu') {
    throw new SatError('usage', 'backend = webgpu runs in the page (npm run dev), one GPUDevice per agent worker; the command line trains on the CPU backend (backend = auto or cpu). GPU speed from Node: npm run bench -- --gpu.');
  }
  return isLlmTask(cfg.task) ? createLlmExperiment(cfg, loadFromDisk) : createExperiment(cfg);
}

/**
 * How a language team seats its configured swap (experiment.ts calls it before stage swapAt): the
 * shipped model is loaded from disk, projected by Stage-0 (unless swapStage0 is off) and distilled
 * (lmSwap.ts); `log` gets the full report.
 */
function lmSwapSeat(cfg: Config, seat: Args['swapSeat'], log?: (line: string) => void): NonNullable<Experiment['swapModel']> {
  return async (exp, j, name) => {
    const r = await swapLmAgent(exp as LlmExperiment, j, name, loadModel(await loadFromDisk(name)), {
      stage0: cfg.swapStage0, delta0: cfg.stage0Delta, distillSteps: 150, distillLr: 1e-3, B: cfg.batch, G: cfg.group, seed: cfg.seed, seat,
    });
    const q = (x: { q50: number; q90: number; q99: number; aboveDelta: number }) => `${sci(x.q50)}/${sci(x.q90)}/${sci(x.q99)} (${fmt(100 * x.aboveDelta, 1)} % > δ)`;
    const counts = lambdaHistogram(r.lambdas);
    const seats = { projection: 'the projection π_new samples (per token, λ(s) solved at sampling time)', student: 'the distilled student samples', raw: 'the new model samples as it is' };
    log?.(
      `swap before stage ${cfg.swapAt}: agent ${j} ← ${r.model}, Stage-0 ${r.stage0 ? `on (δ0 = ${cfg.stage0Delta}, distilled: KL(π_new‖π_θ) = ${sci(r.distillKl)})` : 'off'}; ${seats[r.seat]}; ${r.states} token states\n` +
        `  held-out J ${fmt(r.jBefore)} → ${fmt(r.jAfter)}\n` +
        `  KL to π_cur q50/q90/q99: π_pre ${q(r.klPre)}; projected ${q(r.klProjected)}; student ${q(r.klStudent)}; seated ${q(r.klSeated)}\n` +
        (r.stage0 ? `  hand-over KL(π_θ‖π_new) of the distilled student q50/q90/q99: ${q(r.handover)}\n` : '') +
        `  λ(s) histogram [0,1e-3,1e-2,0.1,1,10,∞): ${counts.join(' ')}`,
    );
    // In the stage record: shares of token states above the agent's radius δ (= δ0 in arith-pnp).
    return {
      agent: j, incoming: r.model, stage0: r.stage0, delta0: cfg.stage0Delta,
      klQuantiles: { q50: r.klSeated.q50, q90: r.klSeated.q90, q99: r.klSeated.q99 },
      outsideBefore: r.klPre.aboveDelta, outsideAfter: r.klSeated.aboveDelta,
      lambdaHist: counts, jBefore: r.jBefore, jAfter: r.jAfter,
    };
  };
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

async function runOne(cfg: Config, onStage?: (s: StageRecord, e: Experiment) => void, opts: { seat?: Args['swapSeat']; log?: (line: string) => void } = {}): Promise<Experiment> {
  const exp = await openExperiment(cfg);
  if (isLlmTask(cfg.task)) exp.swapModel = lmSwapSeat(cfg, opts.seat ?? 'projection', opts.log);
  await runStages(exp, cfg.stages, (s) => {
    if (s.swap && !isLlmTask(cfg.task)) opts.log?.(tabularSwapLine(s, cfg));
    onStage?.(s, exp);
    const seat = s.swap ? exp.team[s.swap.agent] : undefined;
    if (seat instanceof ProjectedLmAgent) {
      if (seat.lastDistil.states > 0) opts.log?.(`  hand-over step: the student was distilled on its batch's ${seat.lastDistil.states} token states (sampled by the projection), KL(π_new‖π_θ) = ${sci(seat.lastDistil.kl)}`);
      opts.log?.(seat.sampler === 'student'
        ? `  hand-over: agent ${s.swap!.agent}'s first update was accepted — its student (the distilled ${s.swap!.incoming}) holds the seat from now on`
        : `  hand-over: agent ${s.swap!.agent}'s update was not accepted — the projection keeps sampling; the next stage tries again`);
    }
  });
  return exp;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const base = presetConfig(args.preset, args.sets);
  if (args.swapModel && args.swapModel !== `${base.task}-${base.swapTo}`) {
    throw new UsageError(`--swap names ${args.swapModel}, but the task is ${base.task}: swap in one of its own shipped models, e.g. ${base.task}-M`);
  }
  const progress = (msg: string) => {
    if (!args.quiet && process.stderr.isTTY) process.stderr.write(`\r${msg}\x1b[K`);
  };

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
        const exp = await runOne(cfg);
        finals.push(exp.stages.at(-1)!.jAfter);
        viol.push(monotonicityViolation(exp.stages));
        held.push(mean(exp.stages.map((x) => x.metrics['cert/held'] as number)));
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
        const exp = await runOne(cfg);
        for (const st of exp.stages) for (const step of st.steps) viol.push(step.check.violRate);
        mono.push(monotonicityViolation(exp.stages));
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
  console.log(`preset ${args.preset}: ${JSON.stringify(diffFromDefaults(cfg))}`);
  let printedHeader = false;
  const exp = await runOne(
    cfg,
    (s, e) => {
      if (!printedHeader) {
        const how = isLlmTask(cfg.task) ? `held-out estimate over ${cfg.evalEpisodes} problems` : 'exact';
        console.log(`J at start ${fmt(e.j0)} (${how}); certificate form ${cfg.certForm}, A_max ${e.aMax}, H ${e.env.horizon}\n`);
        console.log(stageHeader(n));
        printedHeader = true;
      }
      console.log(stageRow(s, n));
    },
    { seat: args.swapSeat, log: (line) => console.log(line) },
  );
  const held = mean(exp.stages.map((s) => s.metrics['cert/held'] as number));
  console.log(`\nfinal J ${fmt(exp.stages.at(-1)!.jAfter)}; ΔJ<0 in ${fmt(monotonicityViolation(exp.stages), 2)} of stages; certificate held in ${fmt(held, 2)} of stages`);
  if (args.json) {
    writeFileSync(args.json, JSON.stringify({ preset: args.preset, config: cfg, j0: exp.j0, stages: exp.stages.map((s) => s.metrics) }, null, 1));
    console.log(`metrics written to ${args.json}`);
  }
}

// `npm run sat … | head` closes the pipe early: that is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

main().catch((e: unknown) => {
  if (e instanceof SatError || e instanceof UsageError || e instanceof RangeError) {
    console.error(`error: ${e.message}`);
    if (e instanceof UsageError) console.error(USAGE);
    process.exit(2);
  }
  throw e;
});
