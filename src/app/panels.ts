/**
 * The page's panels by name, for a lesson layout: a share link's `<name>_hide: true` hides that
 * panel as `<key>_hide` hides a setting's control (share.ts accepts these names too), so a teacher
 * can publish a page with only what today's lesson needs — e.g. the game, the timeline and the J
 * chart. Each name is also the panel's `data-panel` attribute.
 *
 * Not here: hiding one setting (Controls.tsx reads config keys from the same `hide` list).
 */

export const PANELS = {
  settings: 'the Settings column (every config key)',
  team: 'the team builder (agent cards and the order σ)',
  timeline: 'the timeline of agent steps',
  game: 'the game view (payoff table and action probabilities, or one transcript)',
  j: 'the J chart',
  waterfall: 'the certificate waterfall',
  advantages: 'the advantage histogram',
  kl: 'the per-state KL chart',
  beta: 'the β and backtracks chart',
  violation: 'the KL violation-rate chart and Sweep δ',
  orders: 'the Compare orders chart',
  table: 'the stage table',
  transcripts: 'the transcripts and the token inspector',
  files: 'Copy link, Export, Import and Export for a real run',
  claims: 'the Claims button',
} as const;

export type PanelName = keyof typeof PANELS;

export const PANEL_NAMES = Object.keys(PANELS) as PanelName[];

/** True when `hide` (the link's hidden names) leaves panel `name` shown. */
export function shown(hide: readonly string[], name: PanelName): boolean {
  return !hide.includes(name);
}
