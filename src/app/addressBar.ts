/**
 * The address bar is the state: after every step, applied setting, hidden panel or mode change the
 * URL's hash becomes the share link of what the page holds (share.ts, via boot.ts's shareLink: the
 * settings, seed, hidden controls and the step the run reached), so a reload, a bookmark or a
 * copied address replays the same run to the same step — as TensorFlow Playground's URL always is
 * its state. Writes are throttled (at most one every THROTTLE_MS, the last change always written)
 * and skipped while a team is built or a link replays. A new experiment (another preset or applied
 * settings) gets a history entry of its own (pushState), everything else replaces the current one,
 * so Back returns to the experiment before; Back and Forward open that entry's link.
 *
 * Not here: the link format (share.ts) or opening a link (boot.ts, `openLink`).
 */
import { canonicalJson } from './share';
import type { Session } from './session';
import type { PlaygroundState } from './store';

/** Fewest milliseconds between two writes of the address bar. */
export const THROTTLE_MS = 250;

/** The address this tab's page last wrote (sessionStorage: a reload of the tab keeps it). */
const OWN_KEY = 'sat-playground.address';

/**
 * Whether `href` is the address this tab's page wrote last — a reload reopening its own state, not
 * a link from elsewhere: a mode chosen in the tab since that write (projector.ts) outranks the flag.
 */
export function isOwnAddress(href: string): boolean {
  try {
    return globalThis.sessionStorage?.getItem(OWN_KEY) === href;
  } catch {
    return false;
  }
}

function markOwnAddress(href: string): void {
  try {
    globalThis.sessionStorage?.setItem(OWN_KEY, href);
  } catch {
    // storage refused: a reload then treats the address as any link
  }
}

/** What the link is made of; a change in any of these rewrites the address. */
function linkInputs(s: PlaygroundState) {
  return { config: s.config, preset: s.preset, hide: s.hide, question: s.question, projector: s.projector, stages: s.stages.length, partial: s.partial.length, seats: s.seats };
}
/** What makes another experiment (its own history entry). */
const experimentKey = (s: PlaygroundState) => (s.config ? canonicalJson({ c: s.config, p: s.preset }) : '');
const settledStatus = (s: PlaygroundState) => s.status !== 'loading' && s.status !== 'idle' && s.config !== null;

/**
 * Keeps the address bar on the state from now on; `open(hash)` opens a link (Back / Forward).
 * `link()` makes the current link (null when there is nothing to share yet). Returns the stop.
 */
export function followAddressBar(session: Session, link: () => Promise<string | null>, open: (hash: string) => Promise<void>): () => void {
  const store = session.store;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let last = 0;
  let written = experimentKey(store.getState());
  let fromHistory = false;

  const write = async () => {
    timer = null;
    last = Date.now();
    const s = store.getState();
    if (!settledStatus(s)) return;
    let url: string | null;
    try {
      url = await link();
    } catch {
      return; // a state with no link (a team still being built): the next change writes one
    }
    if (!url || url === location.href) return;
    const key = experimentKey(store.getState());
    if (key !== written && written !== '' && !fromHistory) history.pushState(null, '', url);
    else history.replaceState(history.state, '', url);
    markOwnAddress(location.href);
    written = key;
    fromHistory = false;
  };
  const schedule = () => {
    if (timer !== null) return;
    timer = setTimeout(() => void write(), Math.max(0, last + THROTTLE_MS - Date.now()));
  };
  const unsubscribe = store.subscribe((s, prev) => {
    if (!settledStatus(s)) return;
    const a = linkInputs(s);
    const b = linkInputs(prev);
    const changed = (Object.keys(a) as (keyof typeof a)[]).some((k) => a[k] !== b[k]) || !settledStatus(prev);
    if (changed) schedule();
  });
  const onPop = () => {
    fromHistory = true;
    void open(location.hash);
  };
  addEventListener('popstate', onPop);
  if (settledStatus(store.getState())) schedule();
  return () => {
    unsubscribe();
    removeEventListener('popstate', onPop);
    if (timer !== null) clearTimeout(timer);
  };
}
