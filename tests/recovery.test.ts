/**
 * Recovery from a dead agent worker, end to end: the page's session (src/app/session.ts) driven
 * from Node with its team in real workers (comlink over node:worker_threads, the same
 * createRemoteExperiment the page uses, with tests/helpers/nodeAgentWorker.ts). Per seed a seeded
 * Rng picks one agent and one call of its worker API inside one stage; at that call the worker is
 * terminated (the message is dropped, so the call can only end by the worker's death). The test
 * expects: the failing step reports the dead-worker message (remoteTeam.ts's AgentWorkerError,
 * "Agent j's worker stopped …") plus "back at the last completed agent step"; the store and every
 * rebuilt agent's parameters and optimizer state equal the uninterrupted run's at that step;
 * stepping on finishes the run; and every stage record equals the uninterrupted run's (same
 * config and seed, over workers too) exactly, perf/* metrics aside.
 *
 * Seeds: tabular 1–20 (climbing for even seeds, relay for odd; 3 stages each); language (the
 * arith-team preset with the shipped arithmetic-S model, shrunk to 2 small stages) seeds 1–3 —
 * each language seed builds three teams of three workers (the uninterrupted run, the killed run,
 * the rebuild) and runs the stages twice, so 20 seeds would take minutes: the count ran and that
 * reason are printed. The kill plan of each seed is printed.
 *
 * The Session's openTeam (src/app/team.ts) runs agents in-process when there is no Web Worker
 * (Node); here it is replaced by its own worker branch, with Node workers and a file loader.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Endpoint } from 'comlink';
import { Rng } from '../src/core/rng';
import { createRemoteExperiment, type AgentWorker, type RemoteAgent } from '../src/workers/remoteTeam';
import { Session } from '../src/app/session';
import { usePlayground } from '../src/app/store';
import type { TeamHandle } from '../src/app/team';
import type { Config } from '../src/sat/config';
import { presetConfig } from '../src/sat/presets';
import type { StageRecord } from '../src/sat/stage';
import type { AgentSnapshot } from '../src/sat/types';
import { live, nodeAgentWorker } from './helpers/nodeAgentWorker';

const hooks = vi.hoisted(() => ({ openTeam: null as null | ((cfg: Config) => Promise<TeamHandle>) }));
vi.mock('../src/app/team', () => ({ openTeam: (cfg: Config) => hooks.openTeam!(cfg) }));

// ── workers whose API calls are counted, one of which can be made to die ─────────────────────────

/** A team built by the session: its handle and, per agent, the calls posted to its worker so far. */
interface Built {
  readonly handle: TeamHandle;
  readonly calls: number[];
}
/** Every team the session built, in order. */
const built: Built[] = [];
/** When set: the `atCall`-th call to agent `agent`'s worker of team `team` terminates that worker instead. */
let kill: { team: number; agent: number; atCall: number; fired: boolean } | null = null;
/** While true, calls are not counted (the test's own snapshot reads). */
let uncounted = false;

/** `w` with its posted messages (one per AgentApi call) counted, and the planned kill. */
function tapped(w: AgentWorker, team: number, agent: number, calls: number[]): AgentWorker {
  const ep = w.endpoint;
  const endpoint: Endpoint = {
    postMessage(msg: unknown, transfer?: Transferable[]) {
      if (!uncounted) {
        calls[agent]!++;
        if (kill && !kill.fired && kill.team === team && kill.agent === agent && kill.atCall === calls[agent]) {
          kill.fired = true;
          w.terminate(); // the call is never delivered: only the worker's death can end it
          return;
        }
      }
      ep.postMessage(msg, transfer);
    },
    addEventListener: ep.addEventListener.bind(ep),
    removeEventListener: ep.removeEventListener.bind(ep),
  };
  return { endpoint, onDeath: (cb) => w.onDeath(cb), terminate: () => w.terminate() };
}

/** The page's session over the page's store; its teams come from the mocked team.ts above. */
const session = new Session(usePlayground);

const load = async (name: string): Promise<Uint8Array> => new Uint8Array(readFileSync(`public/models/${name}.safetensors`));

/** team.ts's worker branch, with Node workers (tapped) and the model files read from public/models. */
hooks.openTeam = async (cfg) => {
  const team = built.length;
  const calls = Array.from({ length: cfg.agents }, () => 0);
  let next = 0;
  const exp = await createRemoteExperiment(cfg, { makeWorker: () => tapped(nodeAgentWorker(), team, next++, calls), load });
  const memory = await Promise.all((exp.team as readonly RemoteAgent[]).map((a) => a.memoryBytes()));
  const agents = exp.infos.map((info, index) => ({ ...info, index, memoryBytes: memory[index] }));
  const handle: TeamHandle = { exp, agents, backend: `${agents.length} Node workers`, workers: exp.team, terminate: () => exp.terminate() };
  built.push({ handle, calls });
  return handle;
};

// ── driving the session ───────────────────────────────────────────────────────────────────────

/** Records without wall-clock metrics (perf/…), which differ from run to run by nature. */
function strip(recs: readonly StageRecord[]) {
  return recs.map((r) => ({ ...r, metrics: Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !k.startsWith('perf/'))) }));
}

/** What the page shows of the run: finished stages and the agent steps of the stage in progress. */
function shown() {
  const s = usePlayground.getState();
  return { stages: strip(s.stages), partial: s.partial.map((p) => [p.stage, p.agent, p.kl, p.advNorm, p.jAfter]) };
}

async function liveSnapshots(): Promise<AgentSnapshot[]> {
  uncounted = true;
  try {
    return await Promise.all(session.currentTeam()!.exp.team.map((a) => a.snapshot()));
  } finally {
    uncounted = false;
  }
}

/** The uninterrupted run, agent step by agent step: what was shown, the agents, and the calls so far. */
interface Trace {
  readonly shown: ReturnType<typeof shown>[];
  readonly snapshots: AgentSnapshot[][];
  /** calls[t][j]: calls posted to agent j's worker after t agent steps (t = 0: the team as built). */
  readonly calls: number[][];
  /** Agent steps done when stage s (1-based) closed. */
  readonly stageEnd: number[];
}

function ok(): void {
  const s = usePlayground.getState();
  if (s.error) throw new Error(`unexpected session error: ${s.error}`);
}

async function uninterrupted(cfg: Config, preset: string): Promise<Trace> {
  await session.openConfig(cfg, preset, 'reference');
  ok();
  const b = built[built.length - 1]!;
  const trace: Trace = { shown: [shown()], snapshots: [await liveSnapshots()], calls: [b.calls.slice()], stageEnd: [0] };
  for (let t = 1; usePlayground.getState().status !== 'done'; t++) {
    await session.stepAgent();
    ok();
    trace.calls.push(b.calls.slice());
    trace.shown.push(shown());
    trace.snapshots.push(await liveSnapshots());
    if (usePlayground.getState().partial.length === 0) trace.stageEnd.push(t);
  }
  expect(trace.stageEnd.length - 1).toBe(cfg.stages);
  return trace;
}

/**
 * One seed: the uninterrupted run, then the same config with agent `agent`'s worker terminated at
 * its `k`-th call of stage `stage`, checked as the file's header says. Returns the plan (printed).
 */
async function killedRun(cfg: Config, preset: string, seed: number): Promise<string> {
  const ref = await uninterrupted(cfg, preset);
  const rng = new Rng(seed, [0x6b11]);
  const stage = 1 + rng.int(cfg.stages);
  const agent = rng.int(cfg.agents);
  const [t0, t1] = [ref.stageEnd[stage - 1]!, ref.stageEnd[stage]!];
  const first = ref.calls[t0]![agent]!;
  const inStage = ref.calls[t1]![agent]! - first;
  const k = 1 + rng.int(inStage);
  const atCall = first + k;
  // The agent step during which that call is made (1-based), and what was shown before it.
  const failing = ref.calls.findIndex((c) => c[agent]! >= atCall);
  expect(failing).toBeGreaterThan(t0);
  expect(failing).toBeLessThanOrEqual(t1);

  await session.openConfig(cfg, preset, 'killed');
  ok();
  const team = built.length - 1;
  kill = { team, agent, atCall, fired: false };
  let failures = 0;
  for (let t = 1; usePlayground.getState().status !== 'done'; t++) {
    expect(t).toBeLessThanOrEqual(ref.shown.length); // one agent step per press, one press repeated
    await session.stepAgent();
    const s = usePlayground.getState();
    if (!s.error) {
      expect(shown()).toEqual(ref.shown[t]);
      continue;
    }
    failures++;
    expect(t).toBe(failing);
    expect(kill.fired).toBe(true);
    expect(s.status).toBe('error');
    expect(s.error).toMatch(new RegExp(`^Agent ${agent}'s worker stopped \\(it exited with code 1\\); this experiment cannot continue\\.`));
    expect(s.error).toMatch(/The experiment is back at the last completed agent step: every step shown is kept\. The agents now run in fresh workers: step again to go on\.$/);
    // Rebuilt in fresh workers, exactly at the last completed agent step.
    expect(built.length).toBe(team + 2);
    expect(session.currentTeam()).toBe(built[team + 1]!.handle);
    expect(shown()).toEqual(ref.shown[t - 1]);
    const partial = usePlayground.getState().partial;
    expect(partial.length).toBe(t - 1 - ref.stageEnd[stage - 1]!);
    const last = partial[partial.length - 1];
    expect(session.sessionState()?.cursor).toEqual(last ? { stage: last.stage, agent: last.agent } : { stage: usePlayground.getState().stages.length });
    expect(await liveSnapshots()).toEqual(ref.snapshots[t - 1]);
    usePlayground.setState({ error: null, status: 'ready' });
    t--; // the failed step is stepped again
  }
  expect(failures).toBe(1);
  expect(strip(usePlayground.getState().stages)).toEqual(ref.shown[ref.shown.length - 1]!.stages);
  kill = null;
  return `seed ${seed}: ${preset}, agent ${agent}'s worker killed at its call ${k} of ${inStage} in stage ${stage} (agent step ${failing - t0} of the stage)`;
}

beforeEach(() => {
  kill = null;
  usePlayground.setState({ error: null, notice: null });
});

afterAll(async () => {
  session.currentTeam()?.terminate();
  for (const b of built) b.handle.terminate();
  for (let t = 0; t < 100 && live.size > 0; t++) await new Promise((r) => setTimeout(r, 20));
  expect(live.size).toBe(0);
});

const TABULAR_SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);
const LM_SEEDS = [1, 2, 3];

describe('a worker killed at a random point of a stage: the session recovers to the last completed agent step', () => {
  it(`tabular, ${TABULAR_SEEDS.length} seeds (climbing and relay, 3 stages): same records as the uninterrupted run`, async () => {
    const plans: string[] = [];
    for (const seed of TABULAR_SEEDS) {
      const preset = seed % 2 === 0 ? 'climbing' : 'relay';
      plans.push(await killedRun(presetConfig(preset, { stages: 3, seed }), preset, seed));
    }
    console.log(`tabular seeds ${TABULAR_SEEDS.join(', ')}:\n  ${plans.join('\n  ')}`);
  }, 300_000);

  it(`language, ${LM_SEEDS.length} seeds (arith-team, 2 small stages): same records as the uninterrupted run`, async () => {
    const plans: string[] = [];
    const t0 = performance.now();
    for (const seed of LM_SEEDS) {
      const cfg = presetConfig('arith-team', { stages: 2, batch: 2, group: 4, evalEpisodes: 16, seed });
      plans.push(await killedRun(cfg, 'arith-team', seed));
    }
    const perSeed = (performance.now() - t0) / 1000 / LM_SEEDS.length;
    console.log(
      `language seeds ${LM_SEEDS.join(', ')} (${LM_SEEDS.length} of the 20 tabular ones: each takes ~${perSeed.toFixed(1)} s here — ` +
        `an uninterrupted run, a killed run and a rebuild — so 20 would not fit the ~60 s budget):\n  ${plans.join('\n  ')}`,
    );
  }, 300_000);
});
