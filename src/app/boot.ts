/**
 * Start-up and the experiment's life outside the page: what opens when the page loads, share
 * links, and export / import of experiment files. Each function takes the page's Session.
 *
 * On load, in this order:
 *   1. a share link in the URL hash ⇒ its settings (and the checkpoints its seats hold, from this
 *      browser's storage), then a replay to its step (progress shown, cancellable); a bad link
 *      opens the defaults with a banner saying exactly what was wrong;
 *   2. else the autosave in IndexedDB ⇒ the last completed agent step, restored;
 *   3. else the default preset.
 * From then on the address bar holds the state's link (addressBar.ts); a link of the experiment
 * the autosave holds restores the autosave rather than replaying (openLink).
 *
 * Not here: the formats themselves (share.ts, savefile.ts), autosave (autosave.ts, persist.ts) or
 * stepping (session.ts).
 */
import { SatError } from '../core/errors';
import { findPreset, presetConfig } from '../sat/presets';
import type { Autosave } from './autosave';
import { checkInput } from './inputCheck';
import { serializeExperiment, type ExperimentData, type ParseResult } from './savefile';
import { followAddressBar, isOwnAddress } from './addressBar';
import { canonicalJson, decodeShare, encodeShare, makeShareState } from './share';
import type { Session } from './session';
import { fileDataOf, sessionOfFile } from './sessionState';
import { DEFAULT_PRESET, setProjector } from './store';
import { tabProjector } from './projector';
import { reached, refOf } from './stepRef';

// ── files ─────────────────────────────────────────────────────────────────────────────────────

/** The current experiment as file bytes, or null when there is nothing (yet) to save. */
export function experimentBytes(session: Session): Uint8Array | null {
  const s = session.sessionState();
  return s ? serializeExperiment(fileDataOf(s, session.store.getState().agents, new Date().toISOString())) : null;
}

/** Opens an experiment file's bytes; a bad file leaves the current experiment as it was. */
export async function openExperimentBytes(session: Session, bytes: Uint8Array, source: string): Promise<boolean> {
  let r: ParseResult<ExperimentData>;
  try {
    r = await checkInput('experimentFile', bytes, source, [bytes.buffer]); // read in a budgeted worker (inputCheck.ts)
  } catch (e) {
    session.store.setState({ error: `${e instanceof Error ? e.message : String(e)} Your current experiment was not changed.` }); // past its budget: the message names it
    return false;
  }
  if (!r.ok) {
    const kept = /unchanged|not changed/.test(r.error) ? '' : ' Your current experiment was not changed.';
    session.store.setState({ error: `${source}: ${r.error}${kept}` });
    return false;
  }
  const ok = await openData(session, r.value, source);
  const s = session.store.getState();
  if (ok && !s.error) {
    const steps = s.partial.length ? ` and ${s.partial.length} agent step${s.partial.length === 1 ? '' : 's'}` : '';
    session.store.setState({ notice: `Opened ${source.replace(/^The file /, '')}: ${s.preset}, seed ${s.config?.seed}, ${s.stages.length} stage${s.stages.length === 1 ? '' : 's'}${steps}, restored exactly as exported.` });
  }
  return ok;
}

async function openData(session: Session, data: Parameters<typeof sessionOfFile>[0], source: string): Promise<boolean> {
  const saved = sessionOfFile(data);
  try {
    findPreset(saved.preset);
  } catch {
    (saved as { preset: string }).preset = DEFAULT_PRESET;
  }
  await session.restoreSession(saved, `Restoring ${source}…`);
  return session.store.getState().status !== 'error';
}

// ── share links ───────────────────────────────────────────────────────────────────────────────

/** A link to the current settings and the current step. */
export async function shareLink(session: Session): Promise<string> {
  const s = session.store.getState();
  if (!s.config) throw new SatError('state', 'Nothing to share yet: the team is still being built.');
  const last = s.partial[s.partial.length - 1];
  const step = last ? refOf(last) : s.stages.length > 0 ? { stage: s.stages.length } : undefined;
  const checkpoints = s.seats.filter((x) => !x.missing).map(({ agent, name, hash, quant }) => ({ agent, name, hash, quant }));
  const hash = await encodeShare(makeShareState(s.config, { preset: s.preset, step, hide: s.hide, checkpoints, projector: s.projector, question: s.question }));
  return `${location.origin}${location.pathname}${location.search}${hash}`;
}

// ── start-up ──────────────────────────────────────────────────────────────────────────────────

async function openDefault(session: Session): Promise<void> {
  await session.openConfig(presetConfig(DEFAULT_PRESET), DEFAULT_PRESET, 'Building the team…');
}

/**
 * A small handle on `window.satPlayground` for the curious (and the browser tests): the store's
 * state, and `loseDevice(agent)`, which destroys that agent's GPU device as a driver reset would —
 * the next step fails, and the session rebuilds the team from the last completed agent step;
 * `cpuThreads(agent)`, that language agent's CPU kernel threads (src/backend/cpu/threads.ts), or null;
 * `warmed()`, how many of a language team's workers have warmed up since it was built (team.ts).
 */
function exposeHandle(session: Session): void {
  (globalThis as { satPlayground?: unknown }).satPlayground = {
    state: () => session.store.getState(),
    loseDevice: async (agent: number): Promise<boolean> => {
      const a = session.currentTeam()?.workers?.[agent];
      return a ? a.loseDevice() : false;
    },
    cpuThreads: async (agent: number): Promise<unknown> => {
      const a = session.currentTeam()?.workers?.[agent];
      return a ? a.cpuThreads() : null;
    },
    warmed: (): number => session.currentTeam()?.warmed?.() ?? 0,
  };
}

/** The notice after the autosave was restored: how far the run had come. */
function restoredNotice(session: Session): void {
  const s = session.store.getState();
  session.store.setState({ notice: `Restored your last experiment: ${s.stages.length} stage${s.stages.length === 1 ? '' : 's'}${s.partial.length ? ` and ${s.partial.length} agent step${s.partial.length === 1 ? '' : 's'}` : ''}.` });
}

/**
 * Opens a share link (boot, and Back / Forward through the address bar): its settings, hidden
 * controls and seats, then a replay to its step. When this browser's autosave holds the same
 * experiment (preset and settings) at or past that step, it is restored instead of replayed —
 * the address bar always holds the link, so a reload must not cost a language team its run.
 * A bad link leaves the page as it was and says why; returns whether the link opened.
 */
export async function openLink(session: Session, autosave: Autosave | null, hash: string): Promise<boolean> {
  const store = session.store;
  const r = await decodeShare(hash);
  if (!r.ok) {
    if (r.code !== 'empty') store.setState({ error: r.error });
    return false;
  }
  const preset = r.state.preset ?? DEFAULT_PRESET;
  const step = r.state.step;
  store.setState({ hide: r.state.hide, question: r.state.question ?? null });
  // The link's choice, for this page only — unless the link is this tab's own address and the tab's
  // toggle turned the mode off after it was written (a reload right after the toggle).
  if (r.state.projector && !(isOwnAddress(location.href) && tabProjector() === false)) setProjector(true, false);
  const saved = autosave ? await autosave.load() : null;
  if (saved?.ok && saved.data && saved.data.presetName === preset && canonicalJson(saved.data.config) === canonicalJson(r.config) && !(r.state.checkpoints?.length) && saved.data.stages.length >= (step?.stage ?? 0)) {
    if (await openData(session, saved.data, 'the autosaved experiment')) {
      restoredNotice(session);
      return true;
    }
  }
  session.useLinkSeats(r.state.checkpoints ?? []); // its seats' checkpoints, from this browser's storage (or asked for on the card)
  await session.openConfig(r.config, preset, 'Opening the shared experiment…');
  if (step) await session.replayTo(step);
  const s = store.getState();
  const needs = s.seats
    .filter((x) => x.missing)
    .map((x) => ` It seats checkpoint ${x.name} as agent ${x.agent}, which this browser does not keep: agent ${x.agent} runs the shipped model until you pick that folder on its card.`)
    .join('');
  const at = `stage ${s.stages.length}${s.partial.length ? ` and ${s.partial.length} agent step${s.partial.length === 1 ? '' : 's'}` : ''}`;
  store.setState({
    notice: (!step
      ? 'Opened a shared experiment.'
      : reached(s.stages.length, s.partial, step)
        ? `Opened a shared experiment and replayed it to stage ${step.stage}${step.agent !== undefined ? `, agent ${step.agent}` : ''}.`
        : `Opened a shared experiment; its replay to stage ${step.stage} stopped at ${at}. Step on, or Run, from here.`) + needs,
  });
  void autosave?.save();
  return true;
}

/** The page opened as the lesson-link builder's preview (`?lesson-preview`): it neither autosaves nor writes the address bar. */
export const isLessonPreview = (): boolean => new URLSearchParams(location.search).has(LESSON_PREVIEW);
export const LESSON_PREVIEW = 'lesson-preview';

/**
 * What opens when the page loads (see the top of this file), then autosave after every step; from
 * then on the address bar follows the state (addressBar.ts). The builder's preview (isLessonPreview)
 * only opens its link: it must not overwrite the teacher's own autosave.
 */
export async function boot(session: Session, autosave: Autosave): Promise<void> {
  exposeHandle(session);
  if (isLessonPreview()) {
    if (!(await openLink(session, null, location.hash))) await openDefault(session);
    return;
  }
  autosave.attach();
  await openFirst(session, autosave);
  followAddressBar(session, () => shareLink(session), async (hash) => {
    if (hash && hash !== '#') await openLink(session, autosave, hash);
  });
}

async function openFirst(session: Session, autosave: Autosave): Promise<void> {
  const store = session.store;
  const hash = location.hash;
  if (hash && hash !== '#') {
    if (await openLink(session, autosave, hash)) return;
    await openDefault(session);
    return;
  }
  const saved = await autosave.load();
  if (!saved.ok) {
    store.setState({ error: `Could not read the autosaved experiment: ${saved.error}` });
    if (saved.stored) await autosave.clear();
  } else if (saved.data) {
    const ok = await openData(session, saved.data, 'the autosaved experiment');
    if (ok) {
      restoredNotice(session);
      return;
    }
    await autosave.clear();
  }
  await openDefault(session);
}
