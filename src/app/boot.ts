/**
 * Start-up and the experiment's life outside the page: what opens when the page loads, autosave
 * after every agent step, share links, and export / import of experiment files.
 *
 * On load, in this order:
 *   1. a share link in the URL hash ⇒ its settings, then a replay to its step (progress shown,
 *      cancellable); a bad link opens the defaults with a banner saying exactly what was wrong;
 *   2. else the autosave in IndexedDB ⇒ the last completed agent step, restored;
 *   3. else the default preset.
 *
 * Not here: the formats themselves (share.ts, savefile.ts, persist.ts) or stepping (session.ts).
 */
import { SatError } from '../core/errors';
import { findPreset, presetConfig } from '../sat/presets';
import { clearAutosave, loadAutosave, saveAutosave } from './persist';
import { parseExperimentFile, serializeExperiment, type ExperimentData } from './savefile';
import { decodeShare, encodeShare, makeShareState } from './share';
import { currentTeam, describeError, onStep, openConfig, replayTo, restoreSession, sessionState, type SessionState } from './session';
import { DEFAULT_PRESET, usePlayground } from './store';
import { refOf, type StepRef } from './stepRef';

// ── files ─────────────────────────────────────────────────────────────────────────────────────

function toFileData(s: SessionState): ExperimentData {
  const agents = usePlayground.getState().agents;
  return {
    config: s.config,
    presetName: s.preset,
    createdAt: new Date().toISOString(),
    stages: [...s.stages],
    agents: s.boundary.snapshots.map((snapshot, i) => {
      const a = agents[i];
      return a ? { snapshot, info: { name: a.name, kind: a.kind, parameters: a.parameters, backend: a.backend } } : { snapshot };
    }),
    betas: [...s.boundary.betas],
    cursor: s.cursor,
  };
}

function fromFileData(d: ExperimentData): SessionState {
  return {
    config: d.config,
    preset: d.presetName,
    stages: d.stages,
    cursor: d.cursor,
    boundary: { stages: d.stages.length, snapshots: d.agents.map((a) => a.snapshot), betas: d.betas },
  };
}

/** The current experiment as file bytes, or null when there is nothing (yet) to save. */
export function experimentBytes(): Uint8Array | null {
  const s = sessionState();
  return s ? serializeExperiment(toFileData(s)) : null;
}

/** Opens an experiment file's bytes; a bad file leaves the current experiment as it was. */
export async function openExperimentBytes(bytes: Uint8Array, source: string): Promise<boolean> {
  const r = parseExperimentFile(bytes);
  if (!r.ok) {
    usePlayground.setState({ error: `${source}: ${r.error} Your current experiment was not changed.` });
    return false;
  }
  const saved = fromFileData(r.value);
  try {
    findPreset(saved.preset);
  } catch {
    (saved as { preset: string }).preset = DEFAULT_PRESET;
  }
  await restoreSession(saved, `Restoring ${source}…`);
  return usePlayground.getState().status !== 'error';
}

// ── autosave ──────────────────────────────────────────────────────────────────────────────────

let saving = false;
let again = false;
let autosaveError = false;

/** Saves now, or right after the save in flight (never two at once, never a stale one last). */
export async function autosave(): Promise<void> {
  if (saving) {
    again = true;
    return;
  }
  saving = true;
  try {
    do {
      again = false;
      const bytes = experimentBytes();
      if (!bytes) break;
      const r = await saveAutosave(bytes);
      if (!r.ok && !autosaveError) {
        autosaveError = true; // say it once, not after every step
        usePlayground.setState({ error: `Autosave failed: ${r.error}` });
      }
      if (r.ok) autosaveError = false;
    } while (again);
  } finally {
    saving = false;
  }
}

/** Resolves when no autosave is in flight (tests wait on it before reloading). */
export async function autosaveSettled(): Promise<void> {
  while (saving) await new Promise((r) => setTimeout(r, 10));
}

// ── share links ───────────────────────────────────────────────────────────────────────────────

/** A link to the current settings and the current step. */
export async function shareLink(): Promise<string> {
  const s = usePlayground.getState();
  if (!s.config) throw new SatError('state', 'Nothing to share yet: the team is still being built.');
  const last = s.partial[s.partial.length - 1];
  const step = last ? refOf(last) : s.stages.length > 0 ? { stage: s.stages.length } : undefined;
  const hash = await encodeShare(makeShareState(s.config, { preset: s.preset, step, hide: s.hide }));
  return `${location.origin}${location.pathname}${location.search}${hash}`;
}

/** Replays to a link's step: `stage` finished stages, or up to agent `agent`'s update in stage `stage`. */
async function replayStep(step: StepRef): Promise<void> {
  if (step.agent === undefined) return replayTo(step.stage);
  await replayTo(step.stage - 1);
  const team = currentTeam();
  if (!team) return;
  // Step through stage `stage` until agent `agent` has moved (its position in σ is known only then).
  const n = team.exp.team.length;
  for (let k = 0; k < n; k++) {
    const s = usePlayground.getState();
    if (s.partial.some((r) => r.agent === step.agent) || s.stages.length >= step.stage || s.status === 'error') return;
    await replayTo(step.stage - 1, s.partial.length + 1);
  }
}

// ── start-up ──────────────────────────────────────────────────────────────────────────────────

async function openDefault(): Promise<void> {
  await openConfig(presetConfig(DEFAULT_PRESET), DEFAULT_PRESET, 'Building the team…');
}

/**
 * A small handle on `window.satPlayground` for the curious (and the browser tests): the store's
 * state, and `loseDevice(agent)`, which destroys that agent's GPU device as a driver reset would —
 * the next step fails, and the session rebuilds the team from the last completed agent step.
 */
function exposeHandle(): void {
  (globalThis as { satPlayground?: unknown }).satPlayground = {
    state: () => usePlayground.getState(),
    loseDevice: async (agent: number): Promise<boolean> => {
      const a = currentTeam()?.exp.team[agent] as { loseDevice?: () => Promise<boolean> } | undefined;
      return a?.loseDevice ? a.loseDevice() : false;
    },
  };
}

export async function boot(): Promise<void> {
  exposeHandle();
  onStep(() => void autosave());
  const hash = location.hash;
  if (hash && hash !== '#') {
    const r = await decodeShare(hash);
    if (r.ok) {
      const preset = r.state.preset ?? DEFAULT_PRESET;
      usePlayground.setState({ hide: r.state.hide });
      await openConfig(r.config, preset, 'Opening the shared experiment…');
      const step = r.state.step;
      if (step) await replayStep(step);
      const s = usePlayground.getState();
      const reached = step && (step.agent === undefined ? s.stages.length >= step.stage : s.stages.length >= step.stage || s.partial.some((p) => p.agent === step.agent));
      const at = `stage ${s.stages.length}${s.partial.length ? ` and ${s.partial.length} agent step${s.partial.length === 1 ? '' : 's'}` : ''}`;
      usePlayground.setState({
        notice: !step
          ? 'Opened a shared experiment.'
          : reached
            ? `Opened a shared experiment and replayed it to stage ${step.stage}${step.agent !== undefined ? `, agent ${step.agent}` : ''}.`
            : `Opened a shared experiment; its replay to stage ${step.stage} stopped at ${at}. Step on, or Run, from here.`,
      });
      void autosave();
      return;
    }
    if (r.code !== 'empty') usePlayground.setState({ error: r.error });
    await openDefault();
    return;
  }
  const saved = await loadAutosave();
  if (!saved.ok) {
    usePlayground.setState({ error: `Could not read the autosaved experiment: ${saved.error}` });
  } else if (saved.bytes) {
    const ok = await openExperimentBytes(saved.bytes, 'the autosaved experiment');
    if (ok) {
      const s = usePlayground.getState();
      usePlayground.setState({ notice: `Restored your last experiment: ${s.stages.length} stage${s.stages.length === 1 ? '' : 's'}${s.partial.length ? ` and ${s.partial.length} agent step${s.partial.length === 1 ? '' : 's'}` : ''}.` });
      return;
    }
    await clearAutosave();
  }
  await openDefault();
}

export { describeError };
