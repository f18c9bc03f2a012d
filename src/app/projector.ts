/**
 * Projector mode: the page's text at sizes a class reads from the back of a room (every number at
 * least 16 px at 1280×720, chart titles larger, the header one line, the preset's question and
 * Reveal on the first screen). The header's toggle turns it on and off and this browser remembers
 * the choice (localStorage); a link's `projector: true` turns it on for that page without changing
 * what is remembered.
 *
 * Not here: the look itself (styles.css, the `.projector` rules), the state (store: `projector`,
 * `setProjector`) or the link codec (share.ts).
 */
const KEY = 'sat-playground.projector';

/** The mode this browser last chose (off where storage is refused or empty). */
export function rememberedProjector(): boolean {
  try {
    return globalThis.localStorage?.getItem(KEY) === 'on';
  } catch {
    return false;
  }
}

/** Keeps the header toggle's choice for the next visit. */
export function rememberProjector(on: boolean): void {
  try {
    globalThis.localStorage?.setItem(KEY, on ? 'on' : 'off');
  } catch {
    // storage refused (private mode): the mode still switches, it is just not remembered
  }
}
