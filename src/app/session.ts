/**
 * The playground's session: one experiment, driven from the main thread step by step (the stage
 * of docs/method.md §3) while the agents do their work elsewhere (one Web Worker each, see
 * ../workers). A `Session` holds what the page's actions share — the team, the snapshot at the
 * last stage boundary, the stage in progress, whether an action runs — and writes what people see
 * into its store. The page makes one (main.tsx, reachable by components through sessionContext.ts);
 * a test may make several, each with its own store. The buttons, the keyboard shortcuts, share
 * links and autosave all call its methods (applySettings, stepAgent, stepStage, play/pause,
 * replayTo, cancelWork, inspectStep, checkLastStage, the checkpoint seats' methods, sessionState /
 * restoreSession), each documented where it is defined.
 *
 * Only one action runs at a time; a second click while one runs is ignored (buttons show it).
 * Every failure keeps what was done so far and says so in the banner.
 *
 * The stage history lives in the store alone (`stages`, `partial`); src/sat's Experiment only
 * counts the stages done (it numbers the next one by it), which a restore sets.
 *
 * Not here: the seats' and saving's own logic (seats.ts, sessionState.ts), drawing (components,
 * charts), the share-link and file formats (share.ts, savefile.ts), when to save (autosave.ts), or
 * the algorithm (src/sat).
 */
import type { StoreApi } from 'zustand';
import { SatError } from '../core/errors';
import { CONFIG_KEYS, isLlmTask, parseConfig, type Config } from '../sat/config';
import { agentParams, checkStageBound, episodeHorizon, latestEpisodes, restoreTeamState, stepThrough, swapDue, tableGame, teamSize, teamState, type Experiment } from '../sat/experiment';
import { StageProgress } from '../sat/stageProgress';
import { hfSwapRefusal } from '../sat/hfSeatLimits';
import { findPreset, presetConfig } from '../sat/presets';
import type { AgentStepRecord, StageRecord } from '../sat/stage';
import { openTeam, type TeamHandle, type TeamOpener } from './team';
import type { OnnxSeatMode } from './onnxFiles';
import { CheckpointStore, type FileLike, type SeatRef } from './hfFiles';
import type { QuantKind } from '../model/quant';
import { reached, type StepRef } from './stepRef';
import { short, signed3 } from './format';
import type { InspectAnswer } from '../sat/inspect';
import type { HeldCheck } from '../sat/heldCheck';
import { CHECK_RULE, checkPlusMinus, VERDICTS } from '../sat/verdicts';
import type { TranscriptBatch } from './charts/series';
import { gameFrame, probsOfLogits, type GameFrame } from './gameFrame';
import { describeError } from './errorText';
import { SeatManager, type SeatRecord } from './seats';
import { SessionRestore, stateOf, type Boundary, type SessionState } from './sessionState';
import { emptyMetrics, formOf, MAX_TRANSCRIPT_BATCHES, type Form, type PlaygroundState, type Progress, type Speed } from './store';

const SPEED_MS: Record<Speed, number> = { slow: 700, normal: 150, fast: 0 };

/** Step stage shows an agent step once this long has passed since the last thing shown, ms. */
export const SHOW_EVERY_MS = 100;

/**
 * Run ▶ at `fast` draws what was done (agent steps and finished stages) once this long has passed
 * since the last thing drawn, ms: a few redraws a second, so a fast stage's maths is not paid for
 * again in drawing every stage. Every stage is still recorded (autosave, links) and the last one is
 * always drawn.
 */
export const RUN_DRAW_EVERY_MS = 250;

/**
 * A language stage's progress bar is redrawn at most this often, ms: its first report at once, then
 * the latest one each time this has passed, so the bar's renders and repaints stay a few a second
 * while the agents compute (a stage reports a dozen or more phases).
 */
export const STAGE_PROGRESS_EVERY_MS = 250;

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

/**
 * Checks the form; on a bad value the banner names the setting and its range and nothing changes.
 */
export function configFromForm(form: Form): Config {
  const raw: Record<string, string> = {};
  for (const k of CONFIG_KEYS) raw[k] = form[k];
  return parseConfig(raw);
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
  /** Set by cancelWork(): a language stage in progress stops at its next phase or worker call and the team goes back to the last finished stage. */
  private stageCancel: SatError | null = null;
  /** Where this action's pace through a language stage is measured from (its first progress report). */
  private stagePace: Progress['pace'] | undefined;
  /** A stage's progress report held back (STAGE_PROGRESS_EVERY_MS), its timer, and when the bar was last drawn from a report. */
  private heldProgress: { p: Progress; timer: ReturnType<typeof setTimeout> } | null = null;
  private progressShownAt = -Infinity;
  /** Bumped by every new experiment: an action that outlives its experiment drops its results. */
  private generation = 0;
  /** Told after every recorded agent step (autosave hooks in here). */
  private readonly stepListeners = new Set<() => void>();
  /** Step stage or Run is going: a step inside a stage is told with the stage's end (`holdingSteps`). */
  private holdMidStage = false;
  /** A step held by `holdMidStage`, not told yet. */
  private stepHeld = false;
  /**
   * What was done but is not yet in the store (Step stage shows a stage that finishes within
   * SHOW_EVERY_MS once, at its end, instead of re-drawing every chart after every agent; Run at
   * `fast` draws every RUN_DRAW_EVERY_MS): finished stages, then the agent steps of the stage in
   * progress after them, the transcripts they leave and the game view's frames. `flush` moves them
   * to the store.
   */
  private unshown: Unshown | null = null;
  /** The agent steps recorded since this team was built, as "agent.stage": each one's worker keeps it for the inspector. */
  private recorded = new Set<string>();
  /** The token inspector's call in flight, if any: an action waits for it, so no step moves an agent being read. */
  private inspecting: Promise<unknown> | null = null;
  /** The checkpoint seats (seats.ts). */
  private readonly seats: SeatManager;
  /** Saving and restoring, and the restore waiting for checkpoints (sessionState.ts). */
  private readonly saved: SessionRestore;
  /** Table games: every agent's action probabilities as last read (the game view's frames are built from them). */
  private probs: Float64Array[] = [];

  constructor(
    /** Where what people see is written: the page's `usePlayground`, or a test's own store. */
    readonly store: StoreApi<PlaygroundState>,
    private readonly open: TeamOpener = openTeam,
    /** Where seated checkpoints are kept (IndexedDB in the page; none in Node unless a test gives one). */
    checkpoints: CheckpointStore | null = typeof indexedDB === 'undefined' ? null : CheckpointStore.browser(),
  ) {
    const lock = (fn: () => Promise<void>): Promise<boolean> => this.exclusive('loading', fn);
    const progress = (p: Progress | null): void => this.setProgress(p);
    this.seats = new SeatManager({ store, open, progress, lock, adopt: (cfg, t) => this.adopt(cfg, t), changed: () => this.tellListeners() }, checkpoints);
    this.saved = new SessionRestore({
      store, progress, lock,
      build: async (cfg, label) => {
        await this.build(cfg, label);
        return this.team;
      },
      land: (b) => {
        this.boundary = b;
        this.stageStart = null;
      },
      redrawGame: async (stage, position) => {
        this.store.setState({ frames: [] });
        await this.recordFrame(stage, position, null);
      },
      replayStep: (t) => this.advanceOnce(t),
    }, this.seats);
  }

  /**
   * Calls `fn` after every recorded agent step, and after a checkpoint seat built a fresh team (so
   * the autosave never pairs the old team's snapshots with the new seating); returns the unsubscribe.
   * Under Step stage and Run, the steps inside a stage are told once, with the stage's end (or when
   * the action stops): one autosave a stage, not one per agent while the next agent computes.
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
    if (this.heldProgress) clearTimeout(this.heldProgress.timer);
    this.heldProgress = null;
    this.store.setState({ progress: p });
  }

  /** A language stage's report: drawn now if the bar was not drawn from one within STAGE_PROGRESS_EVERY_MS, else the latest is drawn when that has passed. */
  private stageProgress(p: Progress): void {
    if (this.heldProgress) {
      this.heldProgress.p = p;
      return;
    }
    const wait = this.progressShownAt + STAGE_PROGRESS_EVERY_MS - now();
    if (wait <= 0) {
      this.progressShownAt = now();
      this.setProgress(p);
      return;
    }
    const timer = setTimeout(() => {
      const held = this.heldProgress;
      if (!held) return;
      this.progressShownAt = now();
      this.setProgress(held.p);
    }, wait);
    this.heldProgress = { p, timer };
  }

  /** The store as it will be once what is not yet shown is drawn (`flush`). */
  private get view(): PlaygroundState {
    const s = this.state;
    const u = this.unshown;
    if (!u) return s;
    return { ...s, stages: u.stages.length ? [...s.stages, ...u.stages] : s.stages, partial: u.stages.length ? u.steps : [...s.partial, ...u.steps] };
  }

  /** Stages finished, drawn or not yet. */
  private stagesDone(): number {
    return this.state.stages.length + (this.unshown?.stages.length ?? 0);
  }

  private finished(): boolean {
    const s = this.view;
    return !!s.config && s.stages.length >= s.config.stages && s.partial.length === 0;
  }

  /** Runs `fn` as the one action in flight; returns false when another action was running. */
  private async exclusive(status: 'busy' | 'running' | 'loading', fn: () => Promise<void>): Promise<boolean> {
    if (this.busy) return false;
    this.busy = true;
    this.stopRequested = false;
    this.stageCancel = null;
    this.stagePace = undefined;
    this.team?.gate?.open();
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
    this.saved.drop();
    this.gen = null;
    this.unshown = null;
    this.recorded = new Set();
    const old = this.team;
    this.team = null;
    old?.terminate();
    this.store.setState({ ...emptyMetrics(), config: cfg, agents: [], backend: 'starting…', backendLine: null });
    this.setProgress({ label, done: 0, total: 1, cancellable: false });
    await this.seats.resolve(cfg);
    const seats = this.seats.buildExtras(cfg);
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
    this.store.setState({ agents: t.agents, seats: this.seats.views(t.exp.cfg), backend: t.backend, backendLine: t.line ?? null, j0: { J: t.exp.j0, ci: t.exp.lastEval?.ci ?? 0 }, span: t.exp.aMax, horizon: episodeHorizon(t.exp), frames: [] });
    this.probs = [];
    await this.recordFrame(0, -1, null);
    t.warmUp?.();
  }

  /**
   * Table games: the game view's frame after agent step (stage, position) — every agent's table
   * read again at a stage's first step (a swap may have changed a seat) or when none is known yet,
   * else only the agent that moved (`agent`). Reading a table changes nothing in the run.
   */
  private async recordFrame(stage: number, position: number, agent: number | null, hold = false): Promise<void> {
    const t = this.team;
    const game = t && tableGame(t.exp);
    if (!t || !game) return;
    const read = async (j: number) => probsOfLogits(await agentParams(t.exp, j), game.nActions[j]!);
    const n = teamSize(t.exp);
    if (agent === null || position <= 0 || this.probs.length !== n) this.probs = await Promise.all(Array.from({ length: n }, (_, j) => read(j)));
    else this.probs[agent] = await read(agent);
    if (t !== this.team) return;
    const frame: GameFrame = gameFrame(game, this.probs, stage, position);
    if (hold) this.pending().frames.push(frame);
    else this.store.setState((s) => ({ frames: [...s.frames, frame] }));
  }

  /** A team built with new seats (seats.ts) replaces the current one. */
  private async adopt(cfg: Config, t: TeamHandle): Promise<void> {
    ++this.generation;
    this.gen = null;
    this.unshown = null;
    this.recorded = new Set();
    this.team?.terminate();
    this.store.setState({ ...emptyMetrics(), config: cfg });
    await this.install(t);
  }

  private tellListeners(): void {
    if (this.holdMidStage && this.gen !== null) {
      this.stepHeld = true;
      return;
    }
    this.stepHeld = false;
    for (const fn of this.stepListeners) fn();
  }

  /** Runs Step stage's or Run's loop with the steps inside a stage told at its end (`onStep`). */
  private async holdingSteps(fn: () => Promise<void>): Promise<void> {
    this.holdMidStage = true;
    try {
      await fn();
    } finally {
      this.holdMidStage = false;
      if (this.stepHeld) this.tellListeners();
    }
  }

  // ── checkpoint seats (seats.ts) ─────────────────────────────────────────────────────────────

  /** The seats a share link names: seated at the next build from this browser's storage, or reported missing. */
  useLinkSeats(refs: readonly SeatRef[]): void {
    this.seats.useLinkSeats(refs);
  }

  /** The seats as storage, links and experiment files record them. */
  seating(): SeatRecord[] {
    return this.seats.seating();
  }

  /** Seats checkpoint folder `files` as agent j (SeatManager.seatCheckpoint); a restore waiting for it goes on. */
  async seatCheckpoint(j: number, files: readonly FileLike[], expectHash?: string, quant?: QuantKind): Promise<boolean> {
    return this.thenResume(await this.seats.seatCheckpoint(j, files, expectHash, quant));
  }

  /** The card's frozen / trainable choice for the next ONNX folder seated at agent j. */
  chooseOnnxMode(j: number, mode: OnnxSeatMode): void {
    this.seats.chooseOnnxMode(j, mode);
  }

  /** The card's choice of graph for the next ONNX folder seated at agent j (SeatManager.chooseOnnxFile). */
  chooseOnnxFile(j: number, file: string): void {
    this.seats.chooseOnnxFile(j, file);
  }

  /** The card's quantization choice for agent j (SeatManager.chooseSeatQuant); a restore waiting for it goes on. */
  async chooseSeatQuant(j: number, quant: QuantKind): Promise<boolean> {
    return this.thenResume(await this.seats.chooseSeatQuant(j, quant));
  }

  /** Agent j's checkpoint stored as `quant` instead (SeatManager.setSeatQuant); a restore waiting for it goes on. */
  async setSeatQuant(j: number, quant: QuantKind): Promise<boolean> {
    return this.thenResume(await this.seats.setSeatQuant(j, quant));
  }

  /** Agent j back on the shipped model (a fresh team). */
  async clearCheckpoint(j: number): Promise<void> {
    await this.seats.clearCheckpoint(j);
  }

  /** After a seat changed (`ok`): the saved session waiting for checkpoints is restored if it now can be. */
  private async thenResume(ok: boolean): Promise<boolean> {
    if (ok) await this.saved.resume();
    return ok;
  }

  /** Applies the form: a fresh team from those settings (the previous experiment is dropped). */
  async applySettings(keepPrevious = true): Promise<void> {
    let cfg: Config;
    try {
      cfg = configFromForm(this.state.form);
    } catch (e) {
      this.store.setState({ error: describeError(e, 'The running experiment was not changed.') });
      return;
    }
    // The run so far is not thrown away: it stays on the J chart, dashed, until dismissed.
    const before = this.state.stages;
    const changed = changedSettings(this.state.applied, formOf(cfg));
    await this.exclusive('loading', async () => {
      this.store.setState({ applied: formOf(cfg), form: formOf(cfg), error: null });
      await this.build(cfg, 'Building the team…');
    });
    if (keepPrevious && before.length > 0 && this.state.config === cfg) this.store.setState({ previous: { label: `before Apply (${changed || 'same settings'})`, stages: before } });
    else if (!keepPrevious) this.store.setState({ previous: null });
  }

  /** Picks a preset: its settings fill the form and a fresh team is built. */
  async choosePreset(name: string): Promise<void> {
    if (this.busy) return;
    const cfg = presetConfig(findPreset(name).name);
    // A teacher's question belongs to the lesson's preset: another preset drops it.
    this.store.setState({ preset: name, form: formOf(cfg), ...(name !== this.state.preset ? { question: null } : {}) });
    await this.applySettings(false); // another game: its J is not comparable with the run before
  }

  /** Same settings, fresh team (Reset). */
  async reset(): Promise<void> {
    this.store.setState({ form: this.state.applied });
    await this.applySettings(false);
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
  private async advance(show = true, showEnd = true): Promise<void> {
    if (!this.team) throw new SatError('state', 'No experiment is loaded yet: pick a preset or press Apply.');
    const my = this.generation;
    const before = this.sessionState();
    try {
      await this.advanceOnce(this.team, show, showEnd);
    } catch (e) {
      // A failed step (a NaN loss, a dead worker, a lost device) leaves the stage half-done and the
      // agents in an unknown state: put the team back exactly where the last completed agent step
      // left it — the snapshot at the stage boundary plus a deterministic replay — then report.
      if (my === this.generation && before) {
        this.unshown = null;
        try {
          await this.saved.restoreInto(before, 'Recovering the last completed agent step…', true);
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

  /**
   * One agent step; `show` false keeps it out of the store (and off the screen) until `flush` or
   * the stage's end, and `showEnd` false a stage it finishes too.
   */
  private async advanceOnce(t: TeamHandle, show = true, showEnd = true): Promise<void> {
    t.stopWarmUp?.();
    const exp = t.exp;
    const my = this.generation;
    // The configured swap runs before its stage's first agent step (a language swap distils for a
    // while): say so, unless something else (a replay) already shows its progress.
    const swapSeat = !this.gen && swapDue(exp) ? this.seats.holding(exp.cfg.swapAgent) : undefined;
    const refusal = swapSeat ? hfSwapRefusal(exp.cfg, exp.cfg.swapAgent, swapSeat.name) : null;
    if (refusal) throw new SatError('swap', `Stage ${exp.cfg.swapAt} did not start: ${refusal}`);
    const swap = !this.gen && swapDue(exp) && !this.state.progress ? { label: swapLabel(exp.cfg), done: 0, total: 1, cancellable: false } : null;
    if (swap) this.setProgress(swap);
    if (!this.gen) {
      this.followStage(exp);
      this.gen = stepThrough(exp);
    }
    let r: IteratorResult<AgentStepRecord, StageRecord>;
    try {
      r = await this.gen.next();
    } catch (e) {
      if (!(e instanceof SatError && e.code === 'cancelled' && e === this.stageCancel)) throw e;
      await this.backToBoundary(t);
      return;
    }
    if (swap && this.state.progress === swap) this.setProgress(null);
    if (my !== this.generation) return;
    if (r.done) {
      await this.closeStage(r.value, showEnd);
      return;
    }
    const tag = stepTag(r.value);
    if (await t.workers?.[r.value.agent]?.keep(tag)) this.recorded.add(`${r.value.agent}.${tag}`);
    await this.recordFrame(r.value.stage, r.value.position, r.value.agent, true);
    if (my !== this.generation) return;
    const u = this.pending();
    u.steps.push(r.value);
    u.transcripts = withTranscript(u.transcripts, exp, r.value);
    if (r.value.position === teamSize(exp) - 1) {
      const end = await this.gen.next();
      if (my !== this.generation) return;
      if (!end.done) throw new Error('the stage yielded more agent steps than the team has agents');
      await this.closeStage(end.value, showEnd);
    } else if (show) this.flush();
  }

  /** What is done but not yet shown, started empty when everything is shown. */
  private pending(): Unshown {
    this.unshown ??= { stages: [], steps: [], transcripts: this.state.transcripts, frames: [] };
    return this.unshown;
  }

  /** Puts what is not yet shown into the store (one re-draw), then tells the step listeners. */
  private flush(): void {
    const u = this.unshown;
    if (u === null) return;
    this.unshown = null;
    this.store.setState((s) => ({
      ...(u.stages.length ? { stages: [...s.stages, ...u.stages], partial: u.steps } : { partial: [...s.partial, ...u.steps] }),
      selected: null,
      transcripts: u.transcripts,
      ...(u.frames.length ? { frames: [...s.frames, ...u.frames] } : {}),
    }));
    this.tellListeners();
  }

  /** A finished stage: the next boundary; drawn now unless `show` is false (then at the next `flush`). */
  private async closeStage(rec: StageRecord, show = true): Promise<void> {
    this.gen = null;
    if (this.team) this.team.exp.profiler = undefined;
    const before = this.boundary;
    if (this.team) this.boundary = await this.takeBoundary(rec.stage);
    // A swap stage starts from the swapped-in team, which no boundary holds.
    this.stageStart = before && before.stages === rec.stage - 1 && !rec.swap ? before : null;
    const u = this.pending();
    u.stages.push(rec);
    u.steps = [];
    if (show) this.flush();
    else this.tellListeners();
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
    await this.exclusive('busy', () =>
      this.holdingSteps(async () => {
        const start = this.stagesDone();
        let shown = now();
        try {
          while (this.stagesDone() === start && !this.stopRequested) {
            const show = now() - shown >= SHOW_EVERY_MS;
            await this.advance(show);
            if (show) {
              shown = now();
              // Agents in workers: the next step's first call is posted before the browser draws
              // this one, so the drawing overlaps the agent's work instead of preceding it.
              if (!this.team?.workers) await yieldToBrowser();
            }
          }
        } finally {
          this.flush();
        }
      }),
    );
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
    // Long work, not a step ('loading': the status line says where the run stands, not "stepping"):
    // two rollouts of CHECK_PAIRS episodes, progress after each, Cancel honoured between them.
    await this.exclusive('loading', async () => {
      const t = this.team!;
      const start = this.stageStart!;
      const rec = this.state.stages[this.state.stages.length - 1]!;
      const my = this.generation;
      const pairs = CHECK_PAIRS.toLocaleString('en');
      const label = (k: 1 | 2) => `Checking stage ${rec.stage}'s bound: ${k === 1 ? 'the final' : 'the starting'} team's ${pairs} episodes (rollout ${k} of 2; both teams answer the same prompts with the same draws)`;
      this.setProgress({ label: label(1), done: 0, total: 2, cancellable: true });
      const checked = await checkStageBound(t.exp, start.snapshots, rec, CHECK_PAIRS, {
        done: (k) => {
          if (k === 1) this.setProgress({ label: label(2), done: 1, total: 2, cancellable: true });
        },
        cancelled: () => this.stopRequested,
      });
      if (my !== this.generation) return;
      if (!checked) {
        this.store.setState({ notice: `Cancelled the check of stage ${rec.stage}'s bound: the stage stays not checked, and the team is as it was.` });
        return;
      }
      const h = checked.held!;
      this.store.setState((st) => ({
        stages: st.stages.map((r) => (r === rec ? checked : r)),
        notice: checkNotice(rec.stage, rec.certificate.chosen.lower, h),
      }));
    });
  }

  /**
   * Run ▶: agent steps at the chosen speed until paused or every stage is done. At `fast` what was
   * done (agent steps and finished stages) is drawn only once RUN_DRAW_EVERY_MS have passed since
   * the last thing drawn, so the page redraws a few times a second, not after every agent or
   * stage; whatever is left is drawn when Run stops.
   */
  async play(): Promise<void> {
    if (!this.canStep()) return;
    await this.exclusive('running', () =>
      this.holdingSteps(async () => {
        let shown = now();
        try {
          while (!this.stopRequested && !this.finished()) {
            const ms = SPEED_MS[this.state.speed];
            const show = ms > 0 || now() - shown >= RUN_DRAW_EVERY_MS;
            await this.advance(show, show);
            if (show) shown = now();
            if (ms > 0) await sleep(ms);
            else await yieldToBrowser();
          }
        } finally {
          this.flush();
        }
      }),
    );
  }

  /** Pause ❚❚: stops Run after the agent step in progress. */
  pause(): void {
    this.stopRequested = true;
  }

  /**
   * Cancels long work (a replay, a comparison) after the step in progress; a language stage in
   * progress stops at its next phase or worker call, and the team is put back where the last
   * finished stage left it (`backToBoundary`).
   */
  cancelWork(): void {
    this.stopRequested = true;
    this.seats.cancel();
    if (this.gen && this.team?.exp && isLlmTask(this.team.exp.cfg.task)) {
      this.stageCancel = new SatError('cancelled', 'The stage was cancelled.');
      this.team.gate?.close(this.stageCancel);
    }
  }

  /**
   * A language stage tells its progress (stageProgress.ts: what runs, units done of the stage's,
   * Cancel) on the progress bar; the time left is paced from when this action reached the stage.
   */
  private followStage(exp: Experiment): void {
    if (!isLlmTask(exp.cfg.task)) return;
    const stage = exp.stagesDone + 1;
    this.stagePace = undefined;
    exp.profiler = new StageProgress(exp.cfg, teamSize(exp), exp.lastEval !== undefined, (r) => {
      if (this.team?.exp !== exp) return;
      this.stagePace ??= { since: now(), done: r.done };
      this.stageProgress({ label: `Stage ${stage}: ${r.what}`, done: r.done, total: r.total, cancellable: true, pace: this.stagePace, units: true });
    }, () => this.stageCancel).begin(stage, exp.lastEval !== undefined);
  }

  /**
   * After Cancel stopped a language stage: once no worker call is in flight, every agent is
   * restored from the snapshot at the last finished stage (parameters, optimizer state, β) and the
   * stage's agent steps are dropped, so the team and the page stand where that stage left them;
   * stepping again runs the same stage from its start, with the same numbers.
   */
  private async backToBoundary(t: TeamHandle): Promise<void> {
    this.gen = null;
    this.unshown = null;
    t.exp.profiler = undefined;
    await t.gate?.idle();
    t.gate?.open();
    const b = this.boundary!;
    await restoreTeamState(t.exp, b, this.state.stages);
    // The cancelled stage's steps are gone: the inspector must not offer what their workers kept.
    for (const k of [...this.recorded]) if (Number(k.slice(k.indexOf('stage ') + 'stage '.length)) > b.stages) this.recorded.delete(k);
    this.stopRequested = true;
    this.store.setState((s) => ({
      partial: [],
      selected: null,
      transcripts: s.transcripts.filter((x) => x.stage <= b.stages),
      notice: `Stage ${b.stages + 1} was cancelled: the team is back where ${b.stages === 0 ? 'it started' : `stage ${b.stages} left it`}, and stepping again runs stage ${b.stages + 1} from its start.`,
    }));
    this.tellListeners();
  }

  /**
   * Steps until `ref` is reached — the end of stage `ref.stage`, or agent `ref.agent`'s update in
   * it (a share link's "jump to") — showing progress; Cancel stops it where it is.
   */
  async replayTo(ref: StepRef): Promise<void> {
    const cfg = this.state.config;
    if (!cfg || !this.team) return;
    const n = teamSize(this.team.exp);
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
   * worker in one call: any step recorded since this team was built (its worker keeps it within a
   * budget, AgentApi.keep); for a step dropped for room, one before the team was built, while a step
   * runs, or on a table, the answer says why. An action started meanwhile (a step) waits for the
   * call, so no step moves the agent while it is read.
   */
  async inspectStep(ref: Required<StepRef>, maxEpisodes?: number): Promise<InspectAnswer> {
    const no = (reason: string): InspectAnswer => ({ ok: false, reason });
    const team = this.team;
    if (!team || !(Number.isInteger(ref.agent) && ref.agent >= 0 && ref.agent < teamSize(team.exp))) return no('No experiment is loaded yet.');
    const agent = team.workers?.[ref.agent];
    if (!agent) return no('This team\'s agents do not run in workers here, so their updates cannot be inspected.');
    const tag = stepTag(ref);
    if (!this.recorded.has(`${ref.agent}.${tag}`)) {
      const table = await agent.inspect(0, tag).catch(() => null);
      if (table && !table.ok && /is a table|frozen ONNX/.test(table.reason)) return table;
      const s = this.view;
      const ran = s.stages.some((r) => r.stage === ref.stage) || s.partial.some((x) => x.stage === ref.stage && x.agent === ref.agent);
      if (!ran) return no(`Agent ${ref.agent} has not been updated in stage ${ref.stage} yet: step it first.`);
      return no(`Agent ${ref.agent}'s update in stage ${ref.stage} was not made by this team (a restored session, a reload or a recovery builds the team again, and each step is kept by the worker that ran it): step to it again to inspect it.`);
    }
    if (this.busy) return no('A step is in progress: the inspector reads the agent when it is done.');
    const before = this.inspecting;
    const call = (async (): Promise<InspectAnswer> => {
      await before;
      try {
        return await agent.inspect(maxEpisodes, tag);
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
    return this.team ? stateOf(this.view, this.boundary, this.seats) : null;
  }

  /** Rebuilds a saved session (SessionRestore.restoreSession): its team, its stages, the stage in progress replayed. */
  async restoreSession(saved: SessionState, label: string): Promise<void> {
    await this.saved.restoreSession(saved, label);
  }
}

/** What a session has done but not yet put into the store (Session.unshown). */
interface Unshown {
  /** Finished stages, in order, after the store's. */
  readonly stages: StageRecord[];
  /** Agent steps of the stage in progress: after the store's `partial`, or, once `stages` has one, all of them. */
  steps: AgentStepRecord[];
  /** The transcripts as they will be. */
  transcripts: readonly TranscriptBatch[];
  /** The game view's frames, after the store's. */
  readonly frames: GameFrame[];
}

/** How the session names an agent step to the worker that keeps it for the inspector. */
function stepTag(ref: { readonly stage: number; readonly agent: number }): string {
  return `stage ${ref.stage}`;
}

/** What the progress bar says while the configured plug-and-play swap runs (before its stage's first agent step). */
function swapLabel(cfg: Config): string {
  const what = cfg.swapTo === 'best' ? 'the best response to the team' : `the ${cfg.task}-${cfg.swapTo} model`;
  const how = cfg.swapStage0 ? `projected by Stage-0 (δ₀ = ${cfg.stage0Delta})${cfg.swapTo === 'best' ? '' : ' and distilled'}` : 'as it is';
  return `Swapping agent ${cfg.swapAgent}'s seat for ${what}, ${how}, then stage ${cfg.swapAt}'s first agent…`;
}

/** Language tasks: keeps the episodes of the batch this agent step trained on (the transcripts page through them). */
function withTranscript(list: readonly TranscriptBatch[], exp: Experiment, step: AgentStepRecord): readonly TranscriptBatch[] {
  const episodes = latestEpisodes(exp);
  if (episodes.length === 0) return list;
  const batch: TranscriptBatch = { stage: step.stage, before: step.position, episodes };
  return [...list, batch].slice(-MAX_TRANSCRIPT_BATCHES);
}

/** The settings an Apply changed, in words ("lr 0.3 → 0.1, deltas → 0.2,0.5"); '' when none. */
function changedSettings(from: Form, to: Form): string {
  return (Object.keys(to) as (keyof Form)[])
    .filter((k) => from[k] !== to[k])
    .map((k) => `${k} ${from[k] || '—'} → ${to[k] || '—'}`)
    .join(', ');
}

/**
 * What Check bound says when it is done: the bound, the paired estimate of ΔJ with its "±" said,
 * and the verdict with its rule (both in src/sat/verdicts.ts).
 */
export function checkNotice(stage: number, lower: number, h: HeldCheck): string {
  const rule = h.state === 'unchecked' ? '' : ` (${CHECK_RULE[h.state]})`;
  return `Stage ${stage}: lower bound ${signed3(lower)} against ΔJ ≈ ${signed3(h.estimate)} ± ${short(h.se)} (${checkPlusMinus(h.pairs)}): ${VERDICTS[h.state].words}${rule}.`;
}
