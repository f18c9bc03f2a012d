/**
 * The playground's session: one experiment, driven from the main thread step by step (the stage
 * of docs/method.md §3) while the agents do their work elsewhere (one Web Worker each, see
 * ../workers). These are the page's actions, as plain module functions rather than React hooks
 * (they talk to the workers, so they live outside the components): the buttons, the
 * keyboard shortcuts, share links and autosave all call them, and they write the store.
 *
 *   applySettings()  build a fresh team from the form (loading models, measuring J₀)
 *   stepAgent()      one agent update of the current stage (the last one also closes the stage)
 *   stepStage()      finish the current stage
 *   play() / pause() keep stepping at the chosen speed
 *   cancelWork()     stop long work (loading, replaying a link, comparisons) between steps
 *
 * Only one action runs at a time; a second click while one runs is ignored (buttons show it).
 * Every failure keeps what was done so far and says so in the banner.
 *
 * Not here: drawing (components, charts), the share-link and file formats (share.ts, savefile.ts),
 * or the algorithm (src/sat).
 */
import { SatError } from '../core/errors';
import { CONFIG_KEYS, parseConfig, type Config } from '../sat/config';
import { stepThrough, type Experiment } from '../sat/experiment';
import { findPreset, presetConfig } from '../sat/presets';
import type { AgentStepRecord, StageRecord } from '../sat/stage';
import type { AgentSnapshot } from '../sat/types';
import { openTeam, type TeamHandle } from './team';
import { reached, refOf, type StepRef } from './stepRef';
import type { TranscriptBatch } from './charts/series';
import type { LmEnv } from '../sat/lm';
import { emptyMetrics, formOf, MAX_TRANSCRIPT_BATCHES, usePlayground, type Form, type Progress, type Speed } from './store';

// ── the one experiment ────────────────────────────────────────────────────────────────────────

let team: TeamHandle | null = null;
/**
 * The team at the last stage boundary: every agent's parameters and optimizer state, and β per
 * agent. A save file stores this plus the agent steps since (replayed on restore: a run is fixed
 * by its seed), so a restore lands exactly on the last completed agent step.
 */
let boundary: Boundary | null = null;
/** The stage in progress, between agent steps. */
let gen: AsyncGenerator<AgentStepRecord, StageRecord, void> | null = null;
/** True while an action runs; the next one waits its turn or is dropped. */
let busy = false;
/** Set by pause() / cancelWork(); checked between steps. */
let stopRequested = false;
/** Bumped by every new experiment: an action that outlives its experiment drops its results. */
let generation = 0;

export interface Boundary {
  /** Stages finished when it was taken. */
  readonly stages: number;
  readonly snapshots: readonly AgentSnapshot[];
  readonly betas: readonly number[];
}

async function takeBoundary(exp: Experiment): Promise<Boundary> {
  return { stages: exp.stages.length, snapshots: await Promise.all(exp.team.map((a) => a.snapshot())), betas: exp.betas.slice() };
}

const SPEED_MS: Record<Speed, number> = { slow: 700, normal: 150, fast: 0 };

/** Listeners told after every recorded agent step (autosave hooks in here). */
const stepListeners = new Set<() => void>();
export function onStep(fn: () => void): () => void {
  stepListeners.add(fn);
  return () => stepListeners.delete(fn);
}

export function currentExperiment(): Experiment | null {
  return team?.exp ?? null;
}

// ── helpers ───────────────────────────────────────────────────────────────────────────────────

/**
 * Hands the thread back to the browser so clicks and repaints get through. A MessageChannel task,
 * unlike setTimeout(0), is not clamped to 4 ms when nested, nor throttled in a background tab.
 */
export function yieldToBrowser(): Promise<void> {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      resolve();
    };
    ch.port2.postMessage(null);
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A message a person can act on, for any failure. */
export function describeError(e: unknown, kept: string): string {
  if (e instanceof SatError) return `${e.message} ${kept}`;
  const m = e instanceof Error ? e.message : String(e);
  return `Something went wrong: ${m}. ${kept} If it happens again, please report it with the share link.`;
}

function setProgress(p: Progress | null): void {
  usePlayground.setState({ progress: p });
}

/** Runs `fn` as the one action in flight; returns false when another action was running. */
async function exclusive(status: 'busy' | 'running' | 'loading', fn: () => Promise<void>): Promise<boolean> {
  if (busy) return false;
  busy = true;
  stopRequested = false;
  usePlayground.setState({ status });
  try {
    await fn();
    if (usePlayground.getState().status === status) usePlayground.setState({ status: team ? (finished() ? 'done' : 'ready') : 'idle' });
  } catch (e) {
    const handled = e instanceof SatError && (e.code === 'step' || e.code === 'recover'); // already say what was kept
    usePlayground.setState({ status: 'error', error: handled ? e.message : describeError(e, 'Every step shown is complete and kept.') });
  } finally {
    busy = false;
    setProgress(null);
  }
  return true;
}

function finished(): boolean {
  const s = usePlayground.getState();
  return !!s.config && s.stages.length >= s.config.stages && s.partial.length === 0;
}

// ── building a team ───────────────────────────────────────────────────────────────────────────

/**
 * Checks the form; on a bad value the banner names the setting and its range and nothing changes.
 */
export function configFromForm(form: Form): Config {
  const raw: Record<string, string> = {};
  for (const k of CONFIG_KEYS) raw[k] = form[k];
  return parseConfig(raw);
}

async function build(cfg: Config, label: string): Promise<void> {
  const my = ++generation;
  gen = null;
  const old = team;
  team = null;
  old?.terminate();
  usePlayground.setState({ ...emptyMetrics(), config: cfg, agents: [], backend: 'starting…' });
  setProgress({ label, done: 0, total: 1, cancellable: false });
  const t = await openTeam(cfg, (msg) => setProgress({ label: msg, done: 0, total: 1, cancellable: false }));
  if (my !== generation) {
    t.terminate();
    return;
  }
  team = t;
  boundary = await takeBoundary(t.exp);
  usePlayground.setState({ agents: t.agents, backend: t.backend, j0: { J: t.exp.j0, ci: t.exp.lastEval?.ci ?? 0 }, span: t.exp.aMax, horizon: t.exp.env.horizon });
}

/** Applies the form: a fresh team from those settings (the previous experiment is dropped). */
export async function applySettings(): Promise<void> {
  const s = usePlayground.getState();
  let cfg: Config;
  try {
    cfg = configFromForm(s.form);
  } catch (e) {
    usePlayground.setState({ error: describeError(e, 'The running experiment was not changed.') });
    return;
  }
  await exclusive('loading', async () => {
    usePlayground.setState({ applied: formOf(cfg), form: formOf(cfg), error: null });
    await build(cfg, 'Building the team…');
  });
}

/** Picks a preset: its settings fill the form and a fresh team is built. */
export async function choosePreset(name: string): Promise<void> {
  if (busy) return;
  const cfg = presetConfig(findPreset(name).name);
  usePlayground.setState({ preset: name, form: formOf(cfg) });
  await applySettings();
}

/** Same settings, fresh team (Reset). */
export async function reset(): Promise<void> {
  const s = usePlayground.getState();
  usePlayground.setState({ form: s.applied });
  await applySettings();
}

// ── stepping ──────────────────────────────────────────────────────────────────────────────────

/**
 * One agent update. When it is the stage's last agent, the stage is closed too (certificate, J),
 * so the team's J gets its point as soon as every agent has moved.
 */
async function advance(): Promise<void> {
  if (!team) throw new SatError('state', 'No experiment is loaded yet: pick a preset or press Apply.');
  const my = generation;
  const before = sessionState();
  try {
    await advanceOnce(team);
  } catch (e) {
    // A failed step (a NaN loss, a dead worker, a lost device) leaves the stage half-done and the
    // agents in an unknown state: put the team back exactly where the last completed agent step
    // left it — the snapshot at the stage boundary plus a deterministic replay — then report.
    if (my === generation && before) {
      try {
        await restoreInto(before, 'Recovering the last completed agent step…', true);
      } catch (again) {
        throw new SatError('recover', `${describeError(e, '')} Recovering also failed (${again instanceof Error ? again.message : String(again)}); export what you see, then Reset.`);
      }
      const code = (e as { code?: string }).code;
      const advice =
        code === 'numeric' ? ' Try a smaller lr or a larger β, Apply, and step again.'
        : code === 'device-lost' ? ' The agents now run on fresh devices: step again to go on.'
        : code === 'worker' ? ' The agents now run in fresh workers: step again to go on.'
        : '';
      throw new SatError('step', describeError(e, `The experiment is back at the last completed agent step: every step shown is kept.${advice}`));
    }
    throw e;
  }
}

async function advanceOnce(t: TeamHandle): Promise<void> {
  const exp = t.exp;
  const my = generation;
  if (!gen) gen = stepThrough(exp);
  const r = await gen.next();
  if (my !== generation) return;
  if (r.done) {
    await closeStage(r.value);
    return;
  }
  usePlayground.setState((s) => ({ partial: [...s.partial, r.value], selected: null, transcripts: withTranscript(s.transcripts, exp, r.value) }));
  if (r.value.position === exp.team.length - 1) {
    const end = await gen.next();
    if (my !== generation) return;
    if (!end.done) throw new Error('the stage yielded more agent steps than the team has agents');
    await closeStage(end.value);
  }
  for (const fn of stepListeners) fn();
}

/** Language tasks: keeps a few episodes of the batch this agent step trained on. */
function withTranscript(list: readonly TranscriptBatch[], exp: Experiment, step: AgentStepRecord): readonly TranscriptBatch[] {
  const env = exp.env as Partial<LmEnv>;
  if (!Array.isArray(env.lastEpisodes) || env.lastEpisodes.length === 0) return list;
  const batch: TranscriptBatch = { stage: step.stage, before: step.position, episodes: env.lastEpisodes.slice(0, 12) };
  return [...list, batch].slice(-MAX_TRANSCRIPT_BATCHES);
}

async function closeStage(rec: StageRecord): Promise<void> {
  gen = null;
  if (team) boundary = await takeBoundary(team.exp);
  usePlayground.setState((s) => ({ stages: [...s.stages, rec], partial: [], selected: null }));
}

function canStep(): boolean {
  const s = usePlayground.getState();
  if (!team) return false;
  if (finished()) {
    usePlayground.setState({ notice: `All ${s.config?.stages} stages are done. Raise “stages” and Apply, or Reset.` });
    return false;
  }
  return true;
}

export async function stepAgent(): Promise<void> {
  if (!canStep()) return;
  await exclusive('busy', advance);
}

export async function stepStage(): Promise<void> {
  if (!canStep()) return;
  await exclusive('busy', async () => {
    const start = usePlayground.getState().stages.length;
    while (usePlayground.getState().stages.length === start && !stopRequested) {
      await advance();
      await yieldToBrowser();
    }
  });
}

/** Run ▶: agent steps at the chosen speed until paused or every stage is done. */
export async function play(): Promise<void> {
  if (!canStep()) return;
  await exclusive('running', async () => {
    while (!stopRequested && !finished()) {
      await advance();
      const ms = SPEED_MS[usePlayground.getState().speed];
      if (ms > 0) await sleep(ms);
      else await yieldToBrowser();
    }
  });
}

/** Pause ❚❚: stops Run after the agent step in progress. */
export function pause(): void {
  stopRequested = true;
}

/** Cancels long work (a replay, a comparison) after the step in progress. */
export function cancelWork(): void {
  stopRequested = true;
}

export function isBusy(): boolean {
  return busy;
}

/**
 * Steps until `stages` stages and `agentSteps` further agent steps are recorded (a share link's
 * "jump to"), showing progress; Cancel stops it where it is.
 */
export async function replayTo(stages: number, agentSteps = 0): Promise<void> {
  const cfg = usePlayground.getState().config;
  if (!cfg || !team) return;
  const n = team.exp.team.length;
  const target = Math.min(stages, cfg.stages) * n + (stages < cfg.stages ? Math.min(agentSteps, n - 1) : 0);
  await exclusive('loading', async () => {
    for (;;) {
      const s = usePlayground.getState();
      const done = s.stages.length * n + s.partial.length;
      if (done >= target || stopRequested) break;
      setProgress({ label: `Replaying the link: agent step ${done + 1} of ${target}`, done, total: target, cancellable: true });
      await advance();
      await yieldToBrowser();
    }
  });
}

/** Runs `work` as cancellable long work with a progress bar (comparisons, sweeps). */
export async function longWork(label: string, work: (progress: (done: number, total: number, what?: string) => void, cancelled: () => boolean) => Promise<void>): Promise<void> {
  await exclusive('loading', async () => {
    await work(
      (done, total, what) => setProgress({ label: what ?? label, done, total, cancellable: true }),
      () => stopRequested,
    );
  });
}

/** For tests and the console: the team handle (agents, workers). */
export function currentTeam(): TeamHandle | null {
  return team;
}

/** Builds the experiment described by a config without touching the form (links, restores). */
export async function openConfig(cfg: Config, preset: string, label: string): Promise<void> {
  await exclusive('loading', async () => {
    usePlayground.setState({ preset, form: formOf(cfg), applied: formOf(cfg) });
    await build(cfg, label);
  });
}

// ── saving and restoring ──────────────────────────────────────────────────────────────────────

/** What a save file holds: enough to land exactly on the last completed agent step. */
export interface SessionState {
  readonly config: Config;
  readonly preset: string;
  /** Finished stages (their records are the charts' data). */
  readonly stages: readonly StageRecord[];
  /** The last completed agent step (the steps of the stage in progress up to it are replayed on restore). */
  readonly cursor: StepRef;
  /** The team at the end of the last finished stage. */
  readonly boundary: Boundary;
}

/** The session as it stands, or null when nothing is built or an action is in flight. */
export function sessionState(): SessionState | null {
  const s = usePlayground.getState();
  if (!team || !boundary || !s.config || boundary.stages !== s.stages.length) return null;
  const last = s.partial[s.partial.length - 1];
  return { config: s.config, preset: s.preset, stages: s.stages, cursor: last ? refOf(last) : { stage: s.stages.length }, boundary };
}

/**
 * Rebuilds a saved session: a fresh team from its config, every agent restored to the saved
 * boundary, the finished stages put back, then the steps of the stage in progress replayed.
 */
export async function restoreSession(saved: SessionState, label: string): Promise<void> {
  await exclusive('loading', async () => {
    usePlayground.setState({ preset: saved.preset, form: formOf(saved.config), applied: formOf(saved.config) });
    await restoreInto(saved, label);
  });
}

/** A fresh team from the saved config, restored to the saved boundary, the partial stage replayed. */
async function restoreInto(saved: SessionState, label: string, keepSideRuns = false): Promise<void> {
  const n = saved.boundary.snapshots.length;
  const keep = usePlayground.getState();
  await build(saved.config, label);
  if (!team) return;
  const exp = team.exp;
  if (exp.team.length !== n) throw new SatError('format', `The saved experiment has ${n} agents but its settings build ${exp.team.length}; nothing was restored.`);
  await Promise.all(exp.team.map((a, i) => a.restore(saved.boundary.snapshots[i]!)));
  exp.betas.splice(0, exp.betas.length, ...saved.boundary.betas);
  (exp.stages as StageRecord[]).push(...saved.stages);
  exp.lastEval = saved.stages[saved.stages.length - 1]?.evaluation;
  boundary = { ...saved.boundary, stages: saved.stages.length };
  // After a failed step the side runs (order comparison, δ sweep) still belong to these settings.
  usePlayground.setState({ stages: saved.stages, partial: [], ...(keepSideRuns ? { orders: keep.orders, sweep: keep.sweep } : {}) });
  // Replay the stage in progress until the cursor's agent has moved (at most one step per agent).
  for (let k = 0; k < n && !reached(usePlayground.getState().stages.length, usePlayground.getState().partial, saved.cursor); k++) {
    setProgress({ label: `Replaying agent step ${k + 1} of the stage in progress`, done: k, total: n, cancellable: false });
    await advanceOnce(team);
  }
}
