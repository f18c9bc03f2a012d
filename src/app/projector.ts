/**
 * Projector mode: the page's text at sizes a class reads from the back of a room (every number at
 * least 16 px at 1280×720, chart titles larger, the header one line, the preset's question and
 * Reveal on the first screen). The header's toggle turns it on and off and this browser remembers
 * the choice (localStorage); a link's `projector: true` turns it on for that page without changing
 * what is remembered — unless the toggle was used in this tab since (a reload reopens the tab's
 * address, whose flag may predate the toggle).
 *
 * Not here: the look itself (styles.css, the `.projector` rules), the state (store: `projector`,
 * `setProjector`) or the link codec (share.ts).
 */
const KEY = 'sat-playground.projector';
/** The toggle's last choice in this tab (sessionStorage: kept across reloads of the tab only). */
const TAB_KEY = 'sat-playground.projector.tab';

/** The mode this browser last chose (off where storage is refused or empty). */
export function rememberedProjector(): boolean {
  try {
    return globalThis.localStorage?.getItem(KEY) === 'on';
  } catch {
    return false;
  }
}

/**
 * Keeps the header toggle's choice for the next visit, and for this tab: the address bar carries
 * the mode too and is written a moment later (addressBar.ts), so a reload right after the toggle
 * must not take the old address's flag over the choice just made (tabProjector).
 */
export function rememberProjector(on: boolean): void {
  for (const [store, key] of [[globalThis.localStorage, KEY], [globalThis.sessionStorage, TAB_KEY]] as const) {
    try {
      store?.setItem(key, on ? 'on' : 'off');
    } catch {
      // storage refused (private mode): the mode still switches, it is just not remembered
    }
  }
}

/** The toggle's choice made in this tab (null when none): a link's flag opens the mode only where the tab has not chosen since. */
export function tabProjector(): boolean | null {
  try {
    const v = globalThis.sessionStorage?.getItem(TAB_KEY);
    return v === 'on' ? true : v === 'off' ? false : null;
  } catch {
    return null;
  }
}
