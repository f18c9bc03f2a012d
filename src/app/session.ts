/**
 * The playground's session: one experiment, driven from the main thread step by step (the stage
 * of docs/method.md §3) while the agents do their work elsewhere (one Web Worker each, see
 * ../workers). A `Session` holds what the page's actions share — the team, the snapshot at the
 * last stage boundary, the stage in progress, whether an action runs — and writes what people see
 * into its store. The page makes one (main.tsx, reachable by components through sessionContext.ts);
 * a test may make several, each with its own store. The buttons, the keyboard shortcuts, share
 * links and autosave all call its methods:
 *
 *   applySettings()  build a fresh team from the form (loading models, measuring J₀)
 *   stepAgent()      one agent update of the current stage (the last one also closes the stage)
 *   stepStage()      finish the current stage
 *   play() / pause() keep stepping at the chosen speed
 *   replayTo(ref)    step until an agent step (a StepRef) is reached: share links, restores
 *   cancelWork()     stop long work (loading, replaying a link, comparisons) between steps
 *   inspectStep(ref) the token inspector's numbers for a language agent's latest update
 *   seatCheckpoint(j, files)  seat a Hugging Face checkpoint folder as agent j (a fresh team; the
 *                    old one stays until the new one is built, so a bad folder changes nothing)
 *   setSeatQuant(j, quant)    agent j's checkpoint stored q8, q4 or f32 (re-estimated, then a fresh team)
 *   clearCheckpoint(j)        agent j back on the shipped model
 *   useLinkSeats(refs)        the seats a share link names, for the next build
 *
 * Seated checkpoints are part of the experiment like the settings: every build (Apply, Reset, a
 * restore, a recovery) seats them again, from the bytes kept in memory, and the page keeps their
 * files and the seating in IndexedDB (hfFiles.ts `CheckpointStore`), so the first build after a
 * reload seats them again without the folder.
 *
 * Only one action runs at a time; a second click while one runs is ignored (buttons show it).
 * Every failure keeps what was done so far and says so in the banner.
 *
 * The stage history lives in the store alone (`stages`, `partial`); src/sat's Experiment only
 * counts the stages done (it numbers the next one by it), which a restore sets.
 *
 * Not here: drawing (components, charts), the share-link and file formats (share.ts, savefile.ts),
 * saving (autosave.ts), or the algorithm (src/sat).
 */
import type { StoreApi } from 'zustand';
import { SatError } from '../core/errors';
import { CONFIG_KEYS, isLlmTask, parseConfig, type Config } from '../sat/config';
import { restoreTeamState, stepThrough, swapDue, teamState, type Experiment } from '../sat/experiment';
import { hfSwapRefusal } from '../sat/hfSeatLimits';
import { findPreset, presetConfig } from '../sat/presets';
import { checkFinishedStage, type AgentStepRecord, type StageRecord } from '../sat/stage';
import type { AgentSnapshot } from '../sat/types';
import { openTeam, type OpenExtras, type TeamHandle } from './team';
import type { OnnxSeatMode } from './onnxFiles';
import { CheckpointStore, describeSeatEstimate, estimateOf, PAGE_SEAT_QUANT, pageSeatLimit, SEAT_QUANTS, readCheckpointFolder, seatContext, SHORT_HASH, type FileLike, type SeatRef } from './hfFiles';
import type { QuantKind } from '../model/quant';
import type { SeatCheckpoint } from '../workers/remoteTeam';
import { checkFits, formatBytes, type MemoryEstimate } from '../model/hfConfig';
import { reached, refOf, sameStep, type StepRef } from './stepRef';
import { short, signed3 } from './format';
import type { InspectAnswer } from '../sat/inspect';
import type { TranscriptBatch } from './charts/series';
import type { LmEnv } from '../sat/env/lm';
import type { ExperimentData } from './savefile';
import { TabularEnv } from '../sat/env/tabular';
import { gameFrame, probsOfLogits, type GameFrame } from './gameFrame';
import { emptyMetrics, formOf, MAX_TRANSCRIPT_BATCHES, type AgentView, type Form, type PlaygroundState, type Progress, type SeatView, type Speed } from './store';

/**
 * The team at the last stage boundary: every agent's parameters and optimizer state, and β per
 * agent. A save file stores this plus the cursor (replayed on restore: a run is fixed by its
 * seed), so a restore lands exactly on the last completed agent step.
 */
export interface Boundary {
  /** Stages finished when it was taken. */
  readonly stages: number;
  readonly snapshots: readonly AgentSnapshot[];
  readonly betas: readonly number[];
}

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
  /** Language tasks: the seats on a checkpoint of their own ([] when none). Absent (an older file): the seats the page has. */
  readonly checkpoints?: readonly (Required<Omit<SeatRef, 'onnx'>> & Pick<SeatRef, 'onnx'>)[];
}

const SPEED_MS: Record<Speed, number> = { slow: 700, normal: 150, fast: 0 };

/** Step stage shows an agent step once this long has passed since the last thing shown, ms. */
export const SHOW_EVERY_MS = 100;

/** Pairs of episodes Check bound spends (docs/certificate.md §12; the CLI's --held-pairs default). */
export const CHECK_PAIRS = 2048;

function now(): number {
  return performance.now();
}

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

/**
 * Checks the form; on a bad value the banner names the setting and its range and nothing changes.
 */
export function configFromForm(form: Form): Config {
  const raw: Record<string, string> = {};
  for (const k of CONFIG_KEYS) raw[k] = form[k];
  return parseConfig(raw);
}

/** Builds the team for a config (team.ts in the page; tests may pass their own). */
export type TeamOpener = (cfg: Config, onProgress: (msg: string) => void, extras?: OpenExtras) => Promise<TeamHandle>;

/** A seated checkpoint, with what the card shows of it. */
type Seat = SeatCheckpoint & { readonly params: number; stored: number | string; readonly estimate?: string; readonly needs?: string; readonly needsBy?: Readonly<Partial<Record<QuantKind, string>>> };

/** What the card shows of a seat's memory: the estimate for its quantization in words and its total, and the total for each choice. */
async function seatEstimates(files: SeatCheckpoint['files'], cfg: Config, quant: QuantKind, onnx?: SeatCheckpoint['onnx']): Promise<{ estimate: string; needs: string; needsBy: Partial<Record<QuantKind, string>>; total: MemoryEstimate }> {
  const needsBy: Partial<Record<QuantKind, string>> = {};
  let total: MemoryEstimate | undefined;
  const context = await seatContext(files, cfg, onnx); // measured once for the three estimates
  for (const q of SEAT_QUANTS) {
    const e = await estimateOf(files, cfg, q, context, onnx);
    needsBy[q] = formatBytes(e.total);
    if (q === quant) total = e;
  }
  return { estimate: describeSeatEstimate(total!), needs: formatBytes(total!.total), needsBy, total: total! };
}

export class Session {
  private team: TeamHandle | null = null;
  private boundary: Boundary | null = null;
  /** The boundary before the last finished stage, while it is known ("Check bound" needs the stage's start). */
  private stageStart: Boundary | null = null;
  /** The stage in progress, between agent steps. */
  private gen: AsyncGenerator<AgentStepRecord, StageRecord, void> | null = null;
  /** True while an action runs; the next one is dropped. */
  private busy = false;
  /** Set by pause() / cancelWork(); checked between steps. */
  private stopRequested = false;
  /** Bumped by every new experiment: an action that outlives its experiment drops its results. */
  private generation = 0;
  /** Told after every recorded agent step (autosave hooks in here). */
  private readonly stepListeners = new Set<() => void>();
  /**
   * Agent steps of the stage in progress done but not yet in the store (Step stage shows a stage
   * that finishes within SHOW_EVERY_MS once, at its end, instead of re-drawing every chart after
   * every agent), with the transcripts they add. `flush` moves them to the store.
   */
  private unshown: { steps: AgentStepRecord[]; transcripts: readonly TranscriptBatch[] } | null = null;
  /** Per agent, its latest update since this team was built: the one step of it its worker can inspect. */
  private latestUpdate = new Map<number, StepRef>();
  /** The token inspector's call in flight, if any: an action waits for it, so no step moves an agent being read. */
  private inspecting: Promise<unknown> | null = null;
  /** Seats on a checkpoint of their own (agent index → folder). */
  private seats = new Map<number, Seat>();
  /** The card's choice of quantization for a seat without a checkpoint yet (the next folder seated there). */
  private chosenQuant = new Map<number, QuantKind>();
  /** The card's choice for the next ONNX folder seated there: trainable (mapped into our model) or frozen (run by onnxruntime-web). */
  private chosenOnnx = new Map<number, OnnxSeatMode>();
  /** Seats named (by a link) whose checkpoint this browser does not have. */
  private missing = new Map<number, SeatRef>();
  /** What the next build seats: the stored seating (first build), a link's, or nothing new (null). */
  private wanted: readonly SeatRef[] | 'stored' | null = 'stored';
  /** Cancels the checkpoint load in flight. */
  private abort: AbortController | null = null;
  /**
   * A saved session (a file, the autosave) that names checkpoints this browser lacked: restored
   * once every seat it names holds its checkpoint (resumeRestore); dropped by any other build
   * (Apply, a preset, Reset, a link, another file).
   */
  private pendingRestore: { saved: SessionState; label: string } | null = null;
  /** Table games: every agent's action probabilities as last read (the game view's frames are built from them). */
  private probs: Float64Array[] = [];

  constructor(
    /** Where what people see is written: the page's `usePlayground`, or a test's own store. */
    readonly store: StoreApi<PlaygroundState>,
    private readonly open: TeamOpener = openTeam,
    /** Where seated checkpoints are kept (IndexedDB in the page; none in Node unless a test gives one). */
    private readonly checkpoints: CheckpointStore | null = typeof indexedDB === 'undefined' ? null : CheckpointStore.browser(),
  ) {}

  /**
   * Calls `fn` after every recorded agent step, and after a checkpoint seat built a fresh team (so
   * the autosave never pairs the old team's snapshots with the new seating); returns the unsubscribe.
   */
  onStep(fn: () => void): () => void {
    this.stepListeners.add(fn);
    return () => this.stepListeners.delete(fn);
  }

  /** For tests and the console: the experiment and the team handle (agents, workers). */
  currentExperiment(): Experiment | null {
    return this.team?.exp ?? null;
  }

  currentTeam(): TeamHandle | null {
    return this.team;
  }

  isBusy(): boolean {
    return this.busy;
  }

  private get state(): PlaygroundState {
    return this.store.getState();
  }

  private setProgress(p: Progress | null): void {
    this.store.setState({ progress: p });
  }

  private finished(): boolean {
    const s = this.state;
    return !!s.config && s.stages.length >= s.config.stages && s.partial.length === 0;
  }

  /** Runs `fn` as the one action in flight; returns false when another action was running. */
  private async exclusive(status: 'busy' | 'running' | 'loading', fn: () => Promise<void>): Promise<boolean> {
    if (this.busy) return false;
    this.busy = true;
    this.stopRequested = false;
    this.store.setState({ status });
    try {
      while (this.inspecting) await this.inspecting;
      await fn();
      if (this.state.status === status) this.store.setState({ status: this.team ? (this.finished() ? 'done' : 'ready') : 'idle' });
    } catch (e) {
      const handled = e instanceof SatError && (e.code === 'step' || e.code === 'recover'); // already say what was kept
      this.store.setState({ status: 'error', error: handled ? e.message : describeError(e, 'Every step shown is complete and kept.') });
    } finally {
      this.busy = false;
      this.setProgress(null);
    }
    return true;
  }

  // ── building a team ─────────────────────────────────────────────────────────────────────────

  private async takeBoundary(stages: number): Promise<Boundary> {
    return { stages, ...(await teamState(this.team!.exp)) };
  }

  private async build(cfg: Config, label: string): Promise<void> {
    const my = ++this.generation;
    this.pendingRestore = null;
    this.gen = null;
    this.unshown = null;
    this.latestUpdate = new Map();
    const old = this.team;
    this.team = null;
    old?.terminate();
    this.store.setState({ ...emptyMetrics(), config: cfg, agents: [], backend: 'starting…', backendLine: null });
    this.setProgress({ label, done: 0, total: 1, cancellable: false });
    await this.resolveSeats(cfg);
    const seats = this.extras(cfg, this.seats, null);
    let t: TeamHandle;
    try {
      t = await this.open(cfg, (msg) => this.setProgress({ label: msg, done: 0, total: 1, cancellable: false }), seats.extras);
    } finally {
      seats.close();
    }
    if (my !== this.generation) {
      t.terminate();
      return;
    }
    await this.install(t);
  }

  /** A built team becomes the session's. */
  private async install(t: TeamHandle): Promise<void> {
    this.team = t;
    this.boundary = await this.takeBoundary(0);
    this.stageStart = null;
    this.store.setState({ agents: t.agents, seats: this.seatViews(t.exp.cfg), backend: t.backend, backendLine: t.line ?? null, j0: { J: t.exp.j0, ci: t.exp.lastEval?.ci ?? 0 }, span: t.exp.aMax, horizon: t.exp.env.horizon, frames: [] });
    this.probs = [];
    await this.recordFrame(0, -1, null);
  }

  /**
   * Table games: the game view's frame after agent step (stage, position) — every agent's table
   * read again at a stage's first step (a swap may have changed a seat) or when none is known yet,
   * else only the agent that moved (`agent`). Reading a table changes nothing in the run.
   */
  private async recordFrame(stage: number, position: number, agent: number | null): Promise<void> {
    const t = this.team;
    if (!t || !(t.exp.env instanceof TabularEnv)) return;
    const game = t.exp.env.game;
    const read = async (j: number) => probsOfLogits((await t.exp.team[j]!.snapshot()).params, game.nActions[j]!);
    if (agent === null || position <= 0 || this.probs.length !== t.exp.team.length) this.probs = await Promise.all(t.exp.team.map((_, j) => read(j)));
    else this.probs[agent] = await read(agent);
    if (t !== this.team) return;
    const frame: GameFrame = gameFrame(game, this.probs, stage, position);
    this.store.setState((s) => ({ frames: [...s.frames, frame] }));
  }

  // ── checkpoint seats ────────────────────────────────────────────────────────────────────────

  /** The seats that apply to `cfg` (a language task with that many agents). */
  private active(cfg: Config, seats: ReadonlyMap<number, Seat>): Map<number, Seat> {
    return new Map(isLlmTask(cfg.task) ? [...seats].filter(([j]) => j < cfg.agents) : []);
  }

  /**
   * The seats' part of a build, and `close()`, called once the build settled: a worker's progress
   * message that arrives later (or after Cancel) is dropped rather than left on screen.
   */
  private extras(cfg: Config, seats: ReadonlyMap<number, Seat>, signal: AbortSignal | null): { extras: OpenExtras; close: () => void } {
    const active = this.active(cfg, seats);
    let open = true;
    const close = (): void => {
      open = false;
    };
    if (active.size === 0) return { extras: {}, close };
    return { close, extras: {
      seats: active,
      seatLimit: pageSeatLimit(),
      ...(signal ? { signal } : {}),
      onSeatProgress: (j, p) => {
        if (!open || signal?.aborted) return;
        const seat = active.get(j)!;
        this.setProgress({ label: `Agent ${j} ← ${seat.name}${seat.needs ? ` (needs about ${seat.needs})` : ''}: ${p.phase} ${p.done}/${p.total}${p.item ? ` (${p.item})` : ''}`, done: p.done, total: Math.max(1, p.total), cancellable: signal !== null });
      },
    } };
  }

  private seatViews(cfg: Config): SeatView[] {
    const views: SeatView[] = [...this.active(cfg, this.seats)].map(([agent, c]) => ({ agent, name: c.name, hash: c.hash, quant: c.quant, params: c.params, stored: c.stored, ...(c.onnx ? { onnx: c.onnx } : {}), ...(c.needsBy ? { needsBy: c.needsBy } : {}), ...(c.estimate ? { estimate: c.estimate } : {}), ...(c.needs ? { needs: c.needs } : {}) }));
    for (const [agent, r] of this.missing) if (isLlmTask(cfg.task) && agent < cfg.agents && !this.seats.has(agent)) views.push({ agent, name: r.name, hash: r.hash, quant: r.quant ?? PAGE_SEAT_QUANT, missing: true, ...(r.onnx ? { onnx: r.onnx } : {}) });
    return views.sort((a, b) => a.agent - b.agent);
  }

  /** The seats a share link names: seated at the next build from this browser's storage, or reported missing. */
  useLinkSeats(refs: readonly SeatRef[]): void {
    this.wanted = refs;
  }

  /** The seats the link / the stored seating asks for, from storage (once per request). */
  private async resolveSeats(cfg: Config): Promise<void> {
    const wanted = this.wanted;
    if (wanted === null) return;
    this.wanted = null;
    let refs: readonly SeatRef[] = [];
    if (wanted === 'stored') {
      if (!this.checkpoints) return;
      const r = await this.checkpoints.loadSeating();
      if (!r.ok) {
        this.store.setState({ error: `Seated checkpoints: ${r.error}` });
        return;
      }
      refs = r.value;
    } else refs = wanted;
    this.seats = new Map();
    this.missing = new Map();
    for (const ref of refs) {
      const got = this.checkpoints ? await this.checkpoints.load(ref.hash) : ({ ok: true, value: null } as const);
      if (got.ok && got.value) {
        const quant = ref.quant ?? PAGE_SEAT_QUANT;
        const { total: _, ...shown } = await seatEstimates(got.value.files, cfg, quant, ref.onnx);
        this.seats.set(ref.agent, { ...got.value, quant, stored: got.value.bytes, ...(ref.onnx ? { onnx: ref.onnx } : {}), ...shown });
      }
      else {
        this.missing.set(ref.agent, ref);
        if (!got.ok) this.store.setState({ error: `Agent ${ref.agent}'s checkpoint ${ref.name}: ${got.error}` });
      }
    }
    if (wanted !== 'stored') await this.checkpoints?.saveSeating(this.seating());
  }

  /**
   * A fresh team with these seats, built while the current one stays; on failure or Cancel the
   * current team is kept as it was and the banner says why.
   */
  private async rebuildWith(cfg: Config, seats: Map<number, Seat>, what: string): Promise<boolean> {
    const abort = new AbortController();
    this.abort = abort;
    const part = this.extras(cfg, seats, abort.signal);
    let t: TeamHandle;
    try {
      this.setProgress({ label: `${what}: starting the workers…`, done: 0, total: 1, cancellable: true });
      t = await this.open(cfg, (msg) => this.setProgress({ label: msg, done: 0, total: 1, cancellable: true }), part.extras);
    } catch (e) {
      if (e instanceof SatError && e.code === 'cancelled') this.store.setState({ notice: `${what}: cancelled; the team was not changed.` });
      else this.store.setState({ error: `${what}: ${describeError(e, 'The team was not changed.')}` });
      return false;
    } finally {
      this.abort = null;
      part.close();
    }
    ++this.generation;
    this.gen = null;
    this.unshown = null;
    this.latestUpdate = new Map();
    this.team?.terminate();
    this.seats = seats;
    this.store.setState({ ...emptyMetrics(), config: cfg });
    await this.install(t);
    return true;
  }

  /** The seats as storage, links and experiment files record them. */
  seating(): SeatRef[] {
    return [...this.seats].map(([agent, c]) => ({ agent, name: c.name, hash: c.hash, quant: c.quant, ...(c.onnx ? { onnx: c.onnx } : {}) }));
  }

  private async saveSeating(drop: readonly string[] = []): Promise<void> {
    if (!this.checkpoints) return;
    const r = await this.checkpoints.saveSeating(this.seating(), drop);
    if (!r.ok) this.store.setState({ error: `Seated checkpoints: ${r.error}` });
  }

  /**
   * Seats the checkpoint folder `files` (a picker's or a drop's File list) as agent j of the
   * applied language settings: config.json and the memory estimate first (refused before the
   * weights are read when it does not fit), then the load in the seat's worker, with progress and
   * Cancel, then storage. With `expectHash` (a link's seat) a folder with another hash is refused.
   * `quant`: how its weights are stored (default: what the link or the seat had, else q8).
   * Returns whether agent j now holds it; on failure the team is as it was.
   */
  async seatCheckpoint(j: number, files: readonly FileLike[], expectHash?: string, quant?: QuantKind): Promise<boolean> {
    const cfg = this.state.config;
    let ok = false;
    await this.exclusive('loading', async () => {
      const what = `Agent ${j}'s checkpoint`;
      if (!cfg || !isLlmTask(cfg.task) || j < 0 || j >= cfg.agents) {
        this.store.setState({ error: `${what}: a checkpoint can take a seat of a language team (agents 0..${(cfg?.agents ?? 1) - 1}); the team was not changed.` });
        return;
      }
      let c;
      try {
        this.setProgress({ label: `${what}: reading config.json…`, done: 0, total: 1, cancellable: false });
        const q = quant ?? this.chosenQuant.get(j) ?? this.missing.get(j)?.quant ?? this.seats.get(j)?.quant ?? PAGE_SEAT_QUANT;
        const mode = this.chosenOnnx.get(j) ?? this.missing.get(j)?.onnx?.mode ?? this.seats.get(j)?.onnx?.mode ?? 'trainable';
        c = await readCheckpointFolder(files, cfg, pageSeatLimit(), (done, total) => this.setProgress({ label: `${what}: reading file ${done} of ${total}`, done, total, cancellable: false }), q, mode);
        if (expectHash !== undefined && c.hash !== expectHash) {
          const want = this.missing.get(j);
          throw new SatError('checkpoint', `this folder is ${c.name} (hash ${c.hash.slice(0, SHORT_HASH)}…), not the checkpoint the link needs${want ? `, ${want.name}` : ''} (hash ${expectHash.slice(0, SHORT_HASH)}…); pick that folder.`);
        }
      } catch (e) {
        this.store.setState({ error: `${what}: ${describeError(e, 'The team was not changed.')}` });
        return;
      }
      const { total: _, ...shown } = await seatEstimates(c.files, cfg, c.quant, c.onnx);
      const seat: Seat = { name: c.name, hash: c.hash, files: c.files, quant: c.quant, params: c.params, stored: 'not stored', ...(c.onnx ? { onnx: c.onnx } : {}), ...shown };
      const next = new Map(this.seats);
      const previous = next.get(j)?.hash;
      next.set(j, seat);
      if (!(await this.rebuildWith(cfg, next, `Agent ${j} ← ${c.name}`))) return;
      this.missing.delete(j);
      if (this.checkpoints) {
        const saved = await this.checkpoints.save(c);
        seat.stored = saved.ok ? saved.value : saved.error;
        await this.saveSeating(previous ? [previous] : []);
      } else seat.stored = 'this page has no storage';
      for (const fn of this.stepListeners) fn();
      this.store.setState({ seats: this.seatViews(cfg), error: null, notice: `Agent ${j} is now ${c.name} (${seat.params.toLocaleString('en')} parameters, ${c.quant}, ${seat.estimate}).` });
      ok = true;
    });
    if (ok) await this.resumeRestore();
    return ok;
  }

  /** The card's frozen / trainable choice for the next ONNX folder seated at agent j (a seated folder keeps its mode: pick it again to change it). */
  chooseOnnxMode(j: number, mode: OnnxSeatMode): void {
    this.chosenOnnx.set(j, mode);
  }

  /** The card's quantization choice: re-seats agent j's checkpoint so (setSeatQuant), or is kept for the next folder seated there. */
  async chooseSeatQuant(j: number, quant: QuantKind): Promise<boolean> {
    this.chosenQuant.set(j, quant);
    return this.seats.has(j) ? this.setSeatQuant(j, quant) : false;
  }

  /**
   * Agent j's checkpoint stored as `quant` instead: re-estimated for the applied settings and
   * refused (the team unchanged) when it does not fit, else a fresh team with that seat, recorded
   * in the storage's seating. Returns whether agent j now holds it so.
   */
  async setSeatQuant(j: number, quant: QuantKind): Promise<boolean> {
    const cfg = this.state.config;
    const seat = this.seats.get(j);
    if (!cfg || !seat || seat.quant === quant) return false;
    let ok = false;
    await this.exclusive('loading', async () => {
      const what = `Agent ${j}'s checkpoint as ${quant}`;
      let next: Seat;
      try {
        const { total, ...shown } = await seatEstimates(seat.files, cfg, quant, seat.onnx);
        checkFits(total, pageSeatLimit().bytes, pageSeatLimit().where);
        next = { ...seat, quant, ...shown };
      } catch (e) {
        this.store.setState({ error: `${what}: ${describeError(e, 'The team was not changed.')}` });
        return;
      }
      if (!(await this.rebuildWith(cfg, new Map(this.seats).set(j, next), `Agent ${j} ← ${seat.name} (${quant})`))) return;
      await this.saveSeating();
      for (const fn of this.stepListeners) fn();
      this.store.setState({ seats: this.seatViews(cfg), error: null, notice: `Agent ${j} is now ${seat.name} stored ${quant} (${next.estimate}).` });
      ok = true;
    });
    if (ok) await this.resumeRestore();
    return ok;
  }

  /**
   * After a seat changed: the saved session waiting for its checkpoints (pendingRestore) is
   * restored once every seat it names holds the checkpoint it ran, as it ran it (hash and
   * quantization); until then the notice says what is still to pick. (Seating built a fresh team
   * anyway, so no step taken since the file was opened is lost by restoring it.)
   */
  private async resumeRestore(): Promise<void> {
    const p = this.pendingRestore;
    if (!p) return;
    const waiting = (p.saved.checkpoints ?? []).filter((c) => {
      const s = this.seats.get(c.agent);
      return !s || s.hash !== c.hash || s.quant !== c.quant;
    });
    if (waiting.length > 0) {
      const what = waiting.map((c) => {
        const s = this.seats.get(c.agent);
        return s && s.hash === c.hash ? `agent ${c.agent}'s ${c.name} as ${c.quant} (it holds it as ${s.quant}: choose ${c.quant} on its card)` : `agent ${c.agent}'s ${c.name} (hash ${c.hash.slice(0, SHORT_HASH)}…)`;
      });
      this.store.setState((st) => ({ notice: `${st.notice ? `${st.notice} ` : ''}The saved experiment is restored once it has ${what.join(' and ')}.` }));
      return;
    }
    this.pendingRestore = null;
    await this.exclusive('loading', () => this.restoreInto(p.saved, p.label));
    if (this.state.status !== 'error' && this.state.stages.length === p.saved.stages.length) {
      this.store.setState({ notice: `The saved experiment is restored with its checkpoints: ${p.saved.stages.length} stage${p.saved.stages.length === 1 ? '' : 's'}.` });
    }
  }

  /** Agent j back on the shipped model (a fresh team). */
  async clearCheckpoint(j: number): Promise<void> {
    const cfg = this.state.config;
    if (!cfg || (!this.seats.has(j) && !this.missing.has(j))) return;
    await this.exclusive('loading', async () => {
      const next = new Map(this.seats);
      const previous = next.get(j)?.hash;
      next.delete(j);
      this.missing.delete(j);
      if (await this.rebuildWith(cfg, next, `Agent ${j} back on ${cfg.task}-${cfg.model}`)) {
        await this.saveSeating(previous ? [previous] : []);
        for (const fn of this.stepListeners) fn();
      }
    });
  }

  /** Applies the form: a fresh team from those settings (the previous experiment is dropped). */
  async applySettings(): Promise<void> {
    let cfg: Config;
    try {
      cfg = configFromForm(this.state.form);
    } catch (e) {
      this.store.setState({ error: describeError(e, 'The running experiment was not changed.') });
      return;
    }
    await this.exclusive('loading', async () => {
      this.store.setState({ applied: formOf(cfg), form: formOf(cfg), error: null });
      await this.build(cfg, 'Building the team…');
    });
  }

  /** Picks a preset: its settings fill the form and a fresh team is built. */
  async choosePreset(name: string): Promise<void> {
    if (this.busy) return;
    const cfg = presetConfig(findPreset(name).name);
    this.store.setState({ preset: name, form: formOf(cfg) });
    await this.applySettings();
  }

  /** Same settings, fresh team (Reset). */
  async reset(): Promise<void> {
    this.store.setState({ form: this.state.applied });
    await this.applySettings();
  }

  /** Builds the experiment described by a config without touching the hidden controls (links, restores). */
  async openConfig(cfg: Config, preset: string, label: string): Promise<void> {
    await this.exclusive('loading', async () => {
      this.store.setState({ preset, form: formOf(cfg), applied: formOf(cfg) });
      await this.build(cfg, label);
    });
  }

  // ── stepping ────────────────────────────────────────────────────────────────────────────────

  /**
   * One agent update. When it is the stage's last agent, the stage is closed too (certificate, J),
   * so the team's J gets its point as soon as every agent has moved.
   */
  private async advance(show = true): Promise<void> {
    if (!this.team) throw new SatError('state', 'No experiment is loaded yet: pick a preset or press Apply.');
    const my = this.generation;
    const before = this.sessionState();
    try {
      await this.advanceOnce(this.team, show);
    } catch (e) {
      // A failed step (a NaN loss, a dead worker, a lost device) leaves the stage half-done and the
      // agents in an unknown state: put the team back exactly where the last completed agent step
      // left it — the snapshot at the stage boundary plus a deterministic replay — then report.
      if (my === this.generation && before) {
        this.unshown = null;
        try {
          await this.restoreInto(before, 'Recovering the last completed agent step…', true);
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

  /** One agent step; `show` false keeps it out of the store (and off the screen) until `flush` or the stage's end. */
  private async advanceOnce(t: TeamHandle, show = true): Promise<void> {
    const exp = t.exp;
    const my = this.generation;
    // The configured swap runs before its stage's first agent step (a language swap distils for a
    // while): say so, unless something else (a replay) already shows its progress.
    const swapSeat = !this.gen && swapDue(exp) ? this.seats.get(exp.cfg.swapAgent) : undefined;
    const refusal = swapSeat ? hfSwapRefusal(exp.cfg, exp.cfg.swapAgent, swapSeat.name) : null;
    if (refusal) throw new SatError('swap', `Stage ${exp.cfg.swapAt} did not start: ${refusal}`);
    const swap = !this.gen && swapDue(exp) && !this.state.progress ? { label: swapLabel(exp.cfg), done: 0, total: 1, cancellable: false } : null;
    if (swap) this.setProgress(swap);
    if (!this.gen) this.gen = stepThrough(exp);
    const r = await this.gen.next();
    if (swap && this.state.progress === swap) this.setProgress(null);
    if (my !== this.generation) return;
    if (r.done) {
      await this.closeStage(r.value);
      return;
    }
    this.latestUpdate.set(r.value.agent, refOf(r.value));
    await this.recordFrame(r.value.stage, r.value.position, r.value.agent);
    if (my !== this.generation) return;
    const u = this.unshown ?? { steps: [], transcripts: this.state.transcripts };
    this.unshown = { steps: [...u.steps, r.value], transcripts: withTranscript(u.transcripts, exp, r.value) };
    if (r.value.position === exp.team.length - 1) {
      const end = await this.gen.next();
      if (my !== this.generation) return;
      if (!end.done) throw new Error('the stage yielded more agent steps than the team has agents');
      await this.closeStage(end.value);
    } else if (show) this.flush();
  }

  /** Puts the agent steps not yet shown into the store (one re-draw), then tells the step listeners. */
  private flush(): void {
    const u = this.unshown;
    if (u === null) return;
    this.unshown = null;
    this.store.setState((s) => ({ partial: [...s.partial, ...u.steps], selected: null, transcripts: u.transcripts }));
    for (const fn of this.stepListeners) fn();
  }

  private async closeStage(rec: StageRecord): Promise<void> {
    this.gen = null;
    const before = this.boundary;
    if (this.team) this.boundary = await this.takeBoundary(rec.stage);
    // A swap stage starts from the swapped-in team, which no boundary holds.
    this.stageStart = before && before.stages === rec.stage - 1 && !rec.swap ? before : null;
    const u = this.unshown;
    this.unshown = null;
    this.store.setState((s) => ({ stages: [...s.stages, rec], partial: [], selected: null, ...(u ? { transcripts: u.transcripts } : {}) }));
    for (const fn of this.stepListeners) fn();
  }

  private canStep(): boolean {
    if (!this.team) return false;
    if (this.finished()) {
      this.store.setState({ notice: `All ${this.state.config?.stages} stages are done. Raise “stages” and Apply, or Reset.` });
      return false;
    }
    return true;
  }

  /** One agent update; under scheme = simultaneous every agent moves at once, so one step is the whole stage. */
  async stepAgent(): Promise<void> {
    if (this.state.config?.scheme === 'simultaneous') return this.stepStage();
    if (!this.canStep()) return;
    await this.exclusive('busy', () => this.advance());
  }

  /**
   * Step stage: the agents of the current stage one by one. A step is shown as soon as
   * SHOW_EVERY_MS have passed since the last thing shown (a language stage shows every agent);
   * a faster stage is drawn once, when it ends.
   */
  async stepStage(): Promise<void> {
    if (!this.canStep()) return;
    await this.exclusive('busy', async () => {
      const start = this.state.stages.length;
      let shown = now();
      try {
        while (this.state.stages.length === start && !this.stopRequested) {
          const show = now() - shown >= SHOW_EVERY_MS;
          await this.advance(show);
          if (show) {
            shown = now();
            await yieldToBrowser();
          }
        }
      } finally {
        this.flush();
      }
    });
  }

  /**
   * Why "Check bound" cannot run now (null when it can): it checks the last finished stage of a
   * language team, from that stage's end, with the stage's start still kept.
   */
  checkRefusal(): string | null {
    const s = this.state;
    const rec = s.stages[s.stages.length - 1];
    if (!this.team || !s.config || !isLlmTask(s.config.task)) return "Check bound is for language teams: a table game's J is exact, and every stage is checked as it runs.";
    if (!rec) return "Step a stage first: Check bound tests the last finished stage's bound.";
    if (s.partial.length > 0 || this.gen) return `Finish stage ${rec.stage + 1} first: Check bound runs at a stage boundary, from the team the last stage left.`;
    if (rec.held && rec.held.state !== 'unchecked') return `Stage ${rec.stage} is already checked.`;
    if (!this.stageStart) return `Stage ${rec.stage}'s starting team is not kept (after a reload, a replay or a swap it is gone): step another stage and check that one, or check stages as they run with the CLI's --held-pairs.`;
    return null;
  }

  /**
   * Check bound: the last finished language stage's lower bound against a common-random-numbers
   * estimate of its true ΔJ, CHECK_PAIRS pairs of episodes (docs/certificate.md §12). It costs
   * thousands of rollouts, so it runs only when asked; the team is left as it was.
   */
  async checkLastStage(): Promise<void> {
    const why = this.checkRefusal();
    if (why) {
      this.store.setState({ notice: why });
      return;
    }
    await this.exclusive('busy', async () => {
      const t = this.team!;
      const start = this.stageStart!;
      const rec = this.state.stages[this.state.stages.length - 1]!;
      const my = this.generation;
      this.setProgress({ label: `Checking stage ${rec.stage}'s bound: ${CHECK_PAIRS.toLocaleString('en')} pairs of episodes, the starting and the final team on the same prompts…`, done: 0, total: 1, cancellable: false });
      const checked = await checkFinishedStage(t.exp.env, t.exp.team, start.snapshots, rec, CHECK_PAIRS, t.exp.rng);
      if (my !== this.generation) return;
      const h = checked.held!;
      const verdict = h.state === 'held' ? 'held' : h.state === 'not held' ? 'not held' : 'undecided (the estimate cannot tell)';
      this.store.setState((st) => ({
        stages: st.stages.map((r) => (r === rec ? checked : r)),
        notice: `Stage ${rec.stage}: lower bound ${signed3(rec.certificate.chosen.lower)} against ΔJ ≈ ${signed3(h.estimate)} ± ${short(h.se)} (${h.pairs.toLocaleString('en')} pairs): ${verdict}.`,
      }));
    });
  }

  /**
   * Run ▶: agent steps at the chosen speed until paused or every stage is done. At `fast` an agent
   * step is drawn only once SHOW_EVERY_MS have passed since the last thing drawn (every finished
   * stage is drawn), as Step stage does, so the charts redraw a few times a second, not after
   * every agent.
   */
  async play(): Promise<void> {
    if (!this.canStep()) return;
    await this.exclusive('running', async () => {
      let shown = now();
      try {
        while (!this.stopRequested && !this.finished()) {
          const ms = SPEED_MS[this.state.speed];
          const show = ms > 0 || now() - shown >= SHOW_EVERY_MS;
          const stages = this.state.stages.length;
          await this.advance(show);
          if (show || this.state.stages.length !== stages) shown = now();
          if (ms > 0) await sleep(ms);
          else await yieldToBrowser();
        }
      } finally {
        this.flush();
      }
    });
  }

  /** Pause ❚❚: stops Run after the agent step in progress. */
  pause(): void {
    this.stopRequested = true;
  }

  /** Cancels long work (a replay, a comparison) after the step in progress. */
  cancelWork(): void {
    this.stopRequested = true;
    this.abort?.abort();
  }

  /**
   * Steps until `ref` is reached — the end of stage `ref.stage`, or agent `ref.agent`'s update in
   * it (a share link's "jump to") — showing progress; Cancel stops it where it is.
   */
  async replayTo(ref: StepRef): Promise<void> {
    const cfg = this.state.config;
    if (!cfg || !this.team) return;
    const n = this.team.exp.team.length;
    const total = Math.min(ref.stage, cfg.stages) * n; // at most: an agent's step comes at some position of its stage
    await this.exclusive('loading', async () => {
      for (;;) {
        const s = this.state;
        if (reached(s.stages.length, s.partial, ref) || this.finished() || this.stopRequested) break;
        const done = s.stages.length * n + s.partial.length;
        this.setProgress({ label: `Replaying the link: agent step ${done + 1} of ${total}`, done, total, cancellable: true });
        await this.advance();
        await yieldToBrowser();
      }
    });
  }

  /** Runs `work` as cancellable long work with a progress bar (comparisons, sweeps). */
  async longWork(label: string, work: (progress: (done: number, total: number, what?: string) => void, cancelled: () => boolean) => Promise<void>): Promise<void> {
    await this.exclusive('loading', async () => {
      await work(
        (done, total, what) => this.setProgress({ label: what ?? label, done, total, cancellable: true }),
        () => this.stopRequested,
      );
    });
  }

  /**
   * The token inspector's numbers for agent step `ref` (docs/method.md §9b.1), from that agent's
   * worker in one call. Only each agent's latest update can be inspected (its worker keeps that one
   * alone); for any other step, while a step runs, or on a table, the answer says why. An action
   * started meanwhile (a step) waits for the call, so no step moves the agent while it is read.
   */
  async inspectStep(ref: Required<StepRef>, maxEpisodes?: number): Promise<InspectAnswer> {
    const no = (reason: string): InspectAnswer => ({ ok: false, reason });
    if (!this.team?.exp.team[ref.agent]) return no('No experiment is loaded yet.');
    const agent = this.team.workers?.[ref.agent];
    if (!agent) return no('This team\'s agents do not run in workers here, so their updates cannot be inspected.');
    const latest = this.latestUpdate.get(ref.agent);
    if (!latest) return no(`Agent ${ref.agent} has not been updated since this team was built (a restored session or a recovery rebuilds it): step it again to inspect its update.`);
    if (!sameStep(latest, ref)) {
      return no(`Only an agent's latest update can be inspected (its worker keeps that one alone): agent ${ref.agent} has updated since, in stage ${latest.stage}. Select that step to inspect it.`);
    }
    if (this.busy) return no('A step is in progress: the inspector reads the agent when it is done.');
    const before = this.inspecting;
    const call = (async (): Promise<InspectAnswer> => {
      await before;
      try {
        return await agent.inspect(maxEpisodes);
      } catch (e) {
        return no(describeError(e, 'The experiment is unchanged.'));
      }
    })();
    this.inspecting = call;
    try {
      return await call;
    } finally {
      if (this.inspecting === call) this.inspecting = null;
    }
  }

  // ── saving and restoring ────────────────────────────────────────────────────────────────────

  /** The session as it stands, or null when nothing is built or an action is in flight. */
  sessionState(): SessionState | null {
    const s = this.state;
    const b = this.boundary;
    if (!this.team || !b || !s.config || b.stages !== s.stages.length) return null;
    const partial = this.unshown ? [...s.partial, ...this.unshown.steps] : s.partial;
    const last = partial[partial.length - 1];
    const checkpoints = isLlmTask(s.config.task) ? [...this.active(s.config, this.seats)].map(([agent, c]) => ({ agent, name: c.name, hash: c.hash, quant: c.quant, ...(c.onnx ? { onnx: c.onnx } : {}) })) : undefined;
    return { config: s.config, preset: s.preset, stages: s.stages, cursor: last ? refOf(last) : { stage: s.stages.length }, boundary: b, ...(checkpoints ? { checkpoints } : {}) };
  }

  /**
   * Rebuilds a saved session: a fresh team from its config, every agent restored to the saved
   * boundary, the finished stages put back, then the steps of the stage in progress replayed.
   */
  async restoreSession(saved: SessionState, label: string): Promise<void> {
    await this.exclusive('loading', async () => {
      this.store.setState({ preset: saved.preset, form: formOf(saved.config), applied: formOf(saved.config) });
      // The file's seats, from this browser's storage (or asked for on their cards), like a link's;
      // a file without the field keeps the seats the page has, but not an earlier file's missing ones.
      if (saved.checkpoints) this.useLinkSeats(saved.checkpoints);
      else this.missing = new Map();
      await this.restoreInto(saved, label);
    });
  }

  /** A fresh team from the saved config, restored to the saved boundary, the stage in progress replayed to the cursor. */
  private async restoreInto(saved: SessionState, label: string, keepSideRuns = false): Promise<void> {
    const n = saved.boundary.snapshots.length;
    const keep = this.state;
    await this.build(saved.config, label);
    const team = this.team;
    if (!team) return;
    const exp = team.exp;
    // A seat whose checkpoint this browser lacks runs the shipped model: its saved parameters are the checkpoint's, so nothing is restored.
    const lacking = (saved.checkpoints ?? []).filter((c) => this.missing.has(c.agent));
    if (lacking.length > 0) {
      const which = lacking.map((c) => `agent ${c.agent}'s checkpoint ${c.name} (hash ${c.hash.slice(0, SHORT_HASH)}…, ${c.quant})`).join(', ');
      const them = lacking.length === 1 ? 'that folder' : 'those folders';
      this.pendingRestore = keepSideRuns ? null : { saved, label };
      this.store.setState({ error: `The saved experiment seats ${which}, which this browser does not keep: pick ${them} on the agent's card and the saved steps are restored then. Nothing was restored yet; until then the team is the file's settings, fresh.` });
      return;
    }
    if (exp.team.length !== n) throw new SatError('format', `The saved experiment has ${n} agents but its settings build ${exp.team.length}; nothing was restored.`);
    await restoreTeamState(exp, saved.boundary, saved.stages);
    this.boundary = { ...saved.boundary, stages: saved.stages.length };
    this.stageStart = null;
    // After a failed step the side runs (order comparison, δ sweep) still belong to these settings.
    this.store.setState({ stages: saved.stages, partial: [], ...(keepSideRuns ? { orders: keep.orders, sweep: keep.sweep } : {}) });
    // Replay the stage in progress until the cursor's agent has moved (at most one step per agent).
    const restored = this.state.stages.length;
    if (restored > 0) {
      this.store.setState({ frames: [] });
      await this.recordFrame(restored, n - 1, null);
    }
    for (let k = 0; k < n && !reached(this.state.stages.length, this.state.partial, saved.cursor); k++) {
      this.setProgress({ label: `Replaying agent step ${k + 1} of the stage in progress`, done: k, total: n, cancellable: false });
      await this.advanceOnce(team);
    }
  }
}

/** What the progress bar says while the configured plug-and-play swap runs (before its stage's first agent step). */
function swapLabel(cfg: Config): string {
  const what = cfg.swapTo === 'best' ? 'the best response to the team' : `the ${cfg.task}-${cfg.swapTo} model`;
  const how = cfg.swapStage0 ? `projected by Stage-0 (δ₀ = ${cfg.stage0Delta})${cfg.swapTo === 'best' ? '' : ' and distilled'}` : 'as it is';
  return `Swapping agent ${cfg.swapAgent}'s seat for ${what}, ${how}, then stage ${cfg.swapAt}'s first agent…`;
}

/** Language tasks: keeps a few episodes of the batch this agent step trained on. */
function withTranscript(list: readonly TranscriptBatch[], exp: Experiment, step: AgentStepRecord): readonly TranscriptBatch[] {
  const env = exp.env as Partial<LmEnv>;
  if (!Array.isArray(env.lastEpisodes) || env.lastEpisodes.length === 0) return list;
  const batch: TranscriptBatch = { stage: step.stage, before: step.position, episodes: env.lastEpisodes.slice(0, 12) };
  return [...list, batch].slice(-MAX_TRANSCRIPT_BATCHES);
}

// ── the session as a file ─────────────────────────────────────────────────────────────────────

/** A session as experiment-file data (what Export and the autosave write); `agents` adds each agent's info. */
export function fileDataOf(s: SessionState, agents: readonly AgentView[], createdAt: string): ExperimentData {
  return {
    config: s.config,
    presetName: s.preset,
    createdAt,
    stages: s.stages,
    agents: s.boundary.snapshots.map((snapshot, i) => {
      const a = agents[i];
      return a ? { snapshot, info: { name: a.name, kind: a.kind, parameters: a.parameters, backend: a.backend } } : { snapshot };
    }),
    betas: s.boundary.betas,
    cursor: s.cursor,
    ...(s.checkpoints ? { checkpoints: s.checkpoints } : {}),
  };
}

/** The session a file describes (for restoreSession). */
export function sessionOfFile(d: ExperimentData): SessionState {
  return {
    config: d.config,
    preset: d.presetName,
    stages: d.stages,
    cursor: d.cursor,
    boundary: { stages: d.stages.length, snapshots: d.agents.map((a) => a.snapshot), betas: d.betas },
    ...(d.checkpoints ? { checkpoints: d.checkpoints } : {}),
  };
}
