/**
 * The playground's colours, so a colour always means the same thing: one colour per agent, the same
 * everywhere (table, timeline, every chart), neutral ink for team-level series, and
 * one red reserved for "certificate not held". Agent colours follow the Okabe–Ito palette, which
 * stays distinguishable for the common colour-vision deficiencies; red is left out of it on
 * purpose.
 *
 * Not here: layout or typography (styles.css); the verdicts' marks (src/sat/verdicts.ts, whose ink,
 * red and grey these are).
 */
import { VERDICT_GREY, VERDICT_INK, VERDICT_RED } from '../sat/verdicts';


/** Agent i's colour; the list wraps beyond its length. */
export const AGENT_COLORS: readonly string[] = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#8C6D31', '#6A3D9A', '#7F7F7F'];

export function agentColor(i: number): string {
  return AGENT_COLORS[((i % AGENT_COLORS.length) + AGENT_COLORS.length) % AGENT_COLORS.length]!;
}

/** Team-level series and text. */
export const INK = VERDICT_INK;
/** The only red: a certificate that did not hold. */
export const NOT_HELD = VERDICT_RED;

// ── Charts (charts/, components/Timeline.tsx) ──────────────────────────────────────

/** A held certificate's mark: filled in team ink (not held: hollow NOT_HELD). */
export const HELD_FILL = INK;
/** Secondary ink: gridlines' labels, reference lines, the certified floor. */
export const MUTED_INK = VERDICT_GREY;
/** Light rules and gridlines. */
export const GRID = '#e3e1db';
/** The confidence band around team J. */
export const BAND_FILL = 'rgba(31, 35, 40, 0.12)';

/**
 * Team-level series told apart from one another (the order comparison): one dark colour each,
 * none an agent's (a team has at most 6 agents: AGENT_COLORS' first six) nor the "not held" red,
 * each with its own dash pattern as well, so they still read in greyscale on a projector.
 */
export const TEAM_SERIES: readonly { readonly stroke: string; readonly dash: string }[] = [
  { stroke: INK, dash: '' },
  { stroke: '#6A3D9A', dash: '6 3' },
  { stroke: '#1B7F79', dash: '2 3' },
  { stroke: '#9A5B13', dash: '10 3 2 3' },
  { stroke: '#7F7F7F', dash: '4 4' },
];

export function teamSeries(k: number): { readonly stroke: string; readonly dash: string } {
  return TEAM_SERIES[((k % TEAM_SERIES.length) + TEAM_SERIES.length) % TEAM_SERIES.length]!;
}

/** Agent i's colour at an opacity (0..1), as rgba, for fills behind text. */
export function agentTint(i: number, alpha: number): string {
  const hex = agentColor(i).slice(1);
  const v = Number.parseInt(hex, 16);
  return `rgba(${(v >> 16) & 255}, ${(v >> 8) & 255}, ${v & 255}, ${alpha})`;
}
