/**
 * `npm run sat -- --profile`: where a stage's time goes. The stage loop names its phases
 * (src/sat/profile.ts); this file counts the work done in each — for language agents every model
 * forward pass (and its tokens), backward pass and generated token, for every agent the calls it
 * receives — and prints one table per stage, with the stage's token throughput beside what the
 * same model does in a plain training step measured at start-up (the bench's figure, same run).
 *
 * Counting wraps the agents' own objects (their model's forward / backward / generate, the
 * AgentPolicy methods) in place: the numbers the run computes do not change.
 *
 * Not here: the phases themselves (stage.ts names them), any timing inside kernels.
 */
import { LmAgent } from '../sat/agents/lm';
import type { Experiment } from '../sat/experiment';
import { STAGE_PHASES, StageProfiler } from '../sat/profile';
import type { StageRecord } from '../sat/stage';
import type { AgentPolicy } from '../sat/types';

const AGENT_CALLS = ['logProbs', 'klToReference', 'trainStep', 'surrogateGradient', 'fisherVectorProduct', 'distributions', 'generate'] as const;

/** Wraps `obj[name]` so that each call first runs `before(args)`. */
function tap<T extends object>(obj: T, name: string, before: (args: unknown[], result?: unknown) => void, after?: (args: unknown[], result: unknown) => void): void {
  const o = obj as Record<string, unknown>;
  const f = o[name];
  if (typeof f !== 'function') return;
  o[name] = function (this: unknown, ...args: unknown[]) {
    before(args);
    const r = (f as (...a: unknown[]) => unknown).apply(this, args);
    if (after) {
      if (r instanceof Promise) return r.then((v) => (after(args, v), v));
      after(args, r);
    }
    return r;
  };
}

/** Measures the model's plain training throughput: forward + backward of a 64 × 32 batch, tokens/s. */
function trainTokensPerSecond(agent: LmAgent): number {
  const m = agent.model;
  const B = 64;
  const T = 32;
  const tokens = new Int32Array(B * T).map((_, i) => 1 + (i * 7919) % (m.cfg.vocab - 1));
  const V = m.cfg.vocab;
  const d = new Float32Array(B * T * V).fill(1e-4);
  const t0 = performance.now();
  let reps = 0;
  do {
    m.forward(tokens, B, T, { keep: true });
    m.backward(d);
    m.zeroGrad();
    reps++;
  } while (performance.now() - t0 < 1500);
  return (reps * B * T) / ((performance.now() - t0) / 1000);
}

export interface Profiling {
  readonly profiler: StageProfiler;
  /** Training tokens/s of agent 0's model in a plain step (language teams), NaN for tables. */
  readonly benchTokensPerSecond: number;
}

/** Attaches a profiler to `exp`: phases from the stage loop, counts from the wrapped agents. */
export function attachProfiler(exp: Experiment): Profiling {
  const profiler = new StageProfiler();
  exp.profiler = profiler;
  let bench = Number.NaN;
  exp.team.forEach((agent: AgentPolicy, k) => {
    if (agent instanceof LmAgent) {
      // The plain step is timed on the CPU backend only: a GPU seat's calls return before the GPU
      // has done the work, so this synchronous loop would time the submissions, not the step.
      if (k === 0 && agent.model.be.name.startsWith('cpu')) bench = trainTokensPerSecond(agent as LmAgent);
      let lastTokens = 0; // a backward pass runs over the tokens of the kept forward before it
      tap(agent.model, 'forward', (a) => {
        lastTokens = (a[1] as number) * (a[2] as number);
        profiler.count('fwd');
        profiler.count('fwdTokens', lastTokens);
      });
      tap(agent.model, 'backward', () => {
        profiler.count('bwd');
        profiler.count('bwdTokens', lastTokens);
      });
      tap(agent.model, 'generate', () => profiler.count('gen'), (_a, r) => {
        const res = r as { tokens?: readonly Int32Array[] };
        profiler.count('genTokens', (res.tokens ?? []).reduce((s, t) => s + t.length + 1, 0));
      });
    }
    for (const name of AGENT_CALLS) tap(agent, name, () => profiler.count(`call:${name}`));
  });
  return { profiler, benchTokensPerSecond: bench };
}

const pad = (s: string, w: number) => s.padStart(w);
const n0 = (x: number | undefined) => (x ? String(Math.round(x)) : '·');

/** The stage's table: per phase, time, passes, tokens and agent calls; then throughput. */
export function profileTable(rec: StageRecord, p: Profiling): string {
  const rows: string[] = [];
  rows.push(`${'phase'.padEnd(12)}${pad('ms', 9)}${pad('share', 7)}${pad('fwd', 7)}${pad('fwd tok', 10)}${pad('bwd', 6)}${pad('gen', 6)}${pad('gen tok', 9)}${pad('calls', 7)}`);
  let total = 0;
  for (const ph of STAGE_PHASES) total += p.profiler.phases.get(ph)?.ms ?? 0;
  let fwdTok = 0;
  let genTok = 0;
  let bwd = 0;
  let fwd = 0;
  let bwdTok = 0;
  for (const ph of STAGE_PHASES) {
    const t = p.profiler.phases.get(ph);
    if (!t) continue;
    const c = t.counts;
    const calls = Object.entries(c).filter(([k]) => k.startsWith('call:')).reduce((s, [, v]) => s + v, 0);
    fwd += c.fwd ?? 0;
    bwd += c.bwd ?? 0;
    fwdTok += c.fwdTokens ?? 0;
    bwdTok += c.bwdTokens ?? 0;
    genTok += c.genTokens ?? 0;
    rows.push(`${ph.padEnd(12)}${pad(t.ms.toFixed(0), 9)}${pad(`${((100 * t.ms) / Math.max(1e-9, total)).toFixed(0)} %`, 7)}${pad(n0(c.fwd), 7)}${pad(n0(c.fwdTokens), 10)}${pad(n0(c.bwd), 6)}${pad(n0(c.gen), 6)}${pad(n0(c.genTokens), 9)}${pad(n0(calls), 7)}`);
  }
  rows.push(`${'total'.padEnd(12)}${pad(total.toFixed(0), 9)}${pad('100 %', 7)}${pad(n0(fwd), 7)}${pad(n0(fwdTok), 10)}${pad(n0(bwd), 6)}${pad('', 6)}${pad(n0(genTok), 9)}`);
  if (!Number.isFinite(p.benchTokensPerSecond)) return `stage ${rec.stage} profile:\n${rows.join('\n')}`;
  // What the passes alone would cost at the plain step's rate: a token through forward + backward
  // at that rate, a forward-only token at a third of its cost (the backward is about twice the
  // forward). Generation (one short decode step per token) is left out of the estimate.
  const rate = p.benchTokensPerSecond;
  const estimate = (bwdTok + (fwdTok - bwdTok) / 3) / rate;
  return (
    `stage ${rec.stage} profile:\n${rows.join('\n')}\n` +
    `agent 0's model in a plain training step (forward + backward, 64 × 32, measured at start-up): ${rate.toFixed(0)} tokens/s; ` +
    `at that rate this stage's ${bwdTok} backward and ${fwdTok - bwdTok} forward-only tokens would take ${estimate.toFixed(2)} s, against ${(total / 1000).toFixed(2)} s spent ` +
    `(the rest: generation of ${genTok} tokens, per-call overhead, small batches)`
  );
}
