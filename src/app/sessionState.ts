/**
 * A session as it is saved and restored: its state (`SessionState`: config, finished stages, the
 * team at the last stage boundary, the cursor), the experiment-file data it becomes, and the
 * restore that rebuilds one — waiting, when the state names checkpoints this browser lacks, until
 * they are seated (`SessionRestore`). Not here: stepping (session.ts), the seats (seats.ts), the
 * file format (savefile.ts) or when to save (autosave.ts).
 */
import type { StoreApi } from 'zustand';
import { SatError } from '../core/errors';
import type { Config } from '../sat/config';
import { restoreTeamState, teamSize } from '../sat/experiment';
import type { AgentStepRecord, StageRecord } from '../sat/stage';
import type { AgentSnapshot } from '../sat/types';
import { SHORT_HASH } from './hfFiles';
import type { ExperimentData } from './savefile';
import type { SeatManager, SeatRecord } from './seats';
import { reached, refOf, type StepRef } from './stepRef';
import { formOf, type AgentView, type PlaygroundState, type Progress } from './store';
import type { TeamHandle } from './team';

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
  readonly checkpoints?: readonly SeatRecord[];
}

/** What saving and restoring ask of the seats. */
export type SavedSeats = Pick<SeatManager, 'records' | 'useLinkSeats' | 'forgetMissing' | 'isMissing' | 'holding'>;

/**
 * The state of a session whose page shows `s`, at boundary `b`, with the agent steps `unshown`
 * done but not yet in the store; null when the boundary is not the last finished stage's (an
 * action is in flight) or nothing is built.
 */
export function stateOf(s: PlaygroundState, b: Boundary | null, seats: SavedSeats): SessionState | null {
  if (!b || !s.config || b.stages !== s.stages.length) return null;
  const last = s.partial[s.partial.length - 1];
  const checkpoints = seats.records(s.config);
  return { config: s.config, preset: s.preset, stages: s.stages, cursor: last ? refOf(last) : { stage: s.stages.length }, boundary: b, ...(checkpoints ? { checkpoints } : {}) };
}

/** What restoring asks of the session it restores into. */
export interface RestoreHost {
  /** Where the restored stages, errors and notices are written. */
  readonly store: StoreApi<PlaygroundState>;
  /** The progress bar (null hides it). */
  progress(p: Progress | null): void;
  /** Runs `fn` as the session's one action in flight ('loading'); false when another action was running. */
  lock(fn: () => Promise<void>): Promise<boolean>;
  /** A fresh team for `cfg`, made the session's; null when none was built. */
  build(cfg: Config, label: string): Promise<TeamHandle | null>;
  /** The session stands at boundary `b` now (the stage before it not kept). */
  land(b: Boundary): void;
  /** Table games: the game view starts again at the end of stage `stage`, after agent position `position`. */
  redrawGame(stage: number, position: number): Promise<void>;
  /** One agent step of the stage in progress on team `t`, replayed. */
  replayStep(t: TeamHandle): Promise<void>;
}

export class SessionRestore {
  /**
   * A saved session (a file, the autosave) that names checkpoints this browser lacked: restored
   * once every seat it names holds its checkpoint (resume); dropped by any other build (Apply, a
   * preset, Reset, a link, another file).
   */
  private pending: { saved: SessionState; label: string } | null = null;

  constructor(
    private readonly host: RestoreHost,
    private readonly seats: SavedSeats,
  ) {}

  /** Forgets the restore waiting for checkpoints (every build does). */
  drop(): void {
    this.pending = null;
  }

  /**
   * Rebuilds a saved session: a fresh team from its config, every agent restored to the saved
   * boundary, the finished stages put back, then the steps of the stage in progress replayed.
   */
  async restoreSession(saved: SessionState, label: string): Promise<void> {
    await this.host.lock(async () => {
      this.host.store.setState({ preset: saved.preset, form: formOf(saved.config), applied: formOf(saved.config) });
      // The file's seats, from this browser's storage (or asked for on their cards), like a link's;
      // a file without the field keeps the seats the page has, but not an earlier file's missing ones.
      if (saved.checkpoints) this.seats.useLinkSeats(saved.checkpoints);
      else this.seats.forgetMissing();
      await this.restoreInto(saved, label);
    });
  }

  /**
   * A fresh team from the saved config, restored to the saved boundary, the stage in progress
   * replayed to the cursor. `keepSideRuns` (a recovery after a failed step): the side runs (order
   * comparison, δ sweep) still belong to these settings.
   */
  async restoreInto(saved: SessionState, label: string, keepSideRuns = false): Promise<void> {
    const store = this.host.store;
    const n = saved.boundary.snapshots.length;
    const keep = store.getState();
    const team = await this.host.build(saved.config, label);
    if (!team) return;
    const exp = team.exp;
    // A seat whose checkpoint this browser lacks runs the shipped model: its saved parameters are the checkpoint's, so nothing is restored.
    const lacking = (saved.checkpoints ?? []).filter((c) => this.seats.isMissing(c.agent));
    if (lacking.length > 0) {
      const which = lacking.map((c) => `agent ${c.agent}'s checkpoint ${c.name} (hash ${c.hash.slice(0, SHORT_HASH)}…, ${c.quant})`).join(', ');
      const them = lacking.length === 1 ? 'that folder' : 'those folders';
      this.pending = keepSideRuns ? null : { saved, label };
      store.setState({ error: `The saved experiment seats ${which}, which this browser does not keep: pick ${them} on the agent's card and the saved steps are restored then. Nothing was restored yet; until then the team is the file's settings, fresh.` });
      return;
    }
    if (teamSize(exp) !== n) throw new SatError('format', `The saved experiment has ${n} agents but its settings build ${teamSize(exp)}; nothing was restored.`);
    await restoreTeamState(exp, saved.boundary, saved.stages);
    this.host.land({ ...saved.boundary, stages: saved.stages.length });
    store.setState({ stages: saved.stages, partial: [], ...(keepSideRuns ? { orders: keep.orders, sweep: keep.sweep } : {}) });
    // Replay the stage in progress until the cursor's agent has moved (at most one step per agent).
    const restored = store.getState().stages.length;
    if (restored > 0) await this.host.redrawGame(restored, n - 1);
    for (let k = 0; k < n && !reached(store.getState().stages.length, store.getState().partial, saved.cursor); k++) {
      this.host.progress({ label: `Replaying agent step ${k + 1} of the stage in progress`, done: k, total: n, cancellable: false });
      await this.host.replayStep(team);
    }
  }

  /**
   * After a seat changed: the saved session waiting for its checkpoints is restored once every
   * seat it names holds the checkpoint it ran, as it ran it (hash and quantization); until then
   * the notice says what is still to pick. (Seating built a fresh team anyway, so no step taken
   * since the file was opened is lost by restoring it.)
   */
  async resume(): Promise<void> {
    const p = this.pending;
    if (!p) return;
    const store = this.host.store;
    const waiting = (p.saved.checkpoints ?? []).filter((c) => {
      const s = this.seats.holding(c.agent);
      return !s || s.hash !== c.hash || s.quant !== c.quant;
    });
    if (waiting.length > 0) {
      const what = waiting.map((c) => {
        const s = this.seats.holding(c.agent);
        return s && s.hash === c.hash ? `agent ${c.agent}'s ${c.name} as ${c.quant} (it holds it as ${s.quant}: choose ${c.quant} on its card)` : `agent ${c.agent}'s ${c.name} (hash ${c.hash.slice(0, SHORT_HASH)}…)`;
      });
      store.setState((st) => ({ notice: `${st.notice ? `${st.notice} ` : ''}The saved experiment is restored once it has ${what.join(' and ')}.` }));
      return;
    }
    this.pending = null;
    await this.host.lock(() => this.restoreInto(p.saved, p.label));
    const s = store.getState();
    if (s.status !== 'error' && s.stages.length === p.saved.stages.length) {
      store.setState({ notice: `The saved experiment is restored with its checkpoints: ${p.saved.stages.length} stage${p.saved.stages.length === 1 ? '' : 's'}.` });
    }
  }
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
