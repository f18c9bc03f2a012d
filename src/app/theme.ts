/**
 * The playground's colours (UX.md "Visual language"): one colour per agent, the same everywhere
 * (table, later the timeline and every chart), neutral ink for team-level series, and one red
 * reserved for "certificate not held". Agent colours follow the Okabe–Ito palette, which stays
 * distinguishable for the common colour-vision deficiencies; red is left out of it on purpose.
 *
 * Not here: layout or typography (styles.css).
 */

/** Agent i's colour; config allows up to 6 agents, the list wraps beyond its length. */
export const AGENT_COLORS: readonly string[] = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#8C6D31', '#6A3D9A', '#7F7F7F'];

export function agentColor(i: number): string {
  return AGENT_COLORS[((i % AGENT_COLORS.length) + AGENT_COLORS.length) % AGENT_COLORS.length]!;
}

/** Team-level series and text. */
export const INK = '#1f2328';
/** The only red: a certificate that did not hold. */
export const NOT_HELD = '#c62828';
