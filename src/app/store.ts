/**
 * The page's state (zustand): what the form holds, and the run in progress or last finished.
 * Form fields are kept as the strings the user typed; they are checked by `parseConfig` only when
 * a run starts, so its error message (naming the setting and its range) reaches the user intact.
 *
 * Not here: anything that runs an experiment (run.ts holds the actions, as module functions) or
 * rendering. When the playground grows this becomes store/ with one slice per concern
 * (ARCHITECTURE.md convention 7); the names below are meant to move there unchanged.
 */
import { create } from 'zustand';
import { PRESETS, presetConfig } from '../sat/presets';
import type { StageRow } from './stageRow';

export type RunStatus = 'idle' | 'running' | 'done' | 'cancelled' | 'error';

/** What a finished or running table belongs to (the form may have changed since). */
export interface RunInfo {
  readonly preset: string;
  readonly seed: number;
  readonly nAgents: number;
  /** Exact J of the initial team, before stage 1. */
  readonly j0: number;
  /** KL radius δ of the trust region (shown next to the KL columns). */
  readonly delta: number;
  readonly alpha: number;
}

export interface PlaygroundState {
  preset: string;
  seed: string;
  stages: string;
  status: RunStatus;
  /** Stages asked for in the current/last run. */
  total: number;
  rows: StageRow[];
  info: RunInfo | null;
  /** A message a person can act on; shown in a banner. */
  error: string | null;
}

export const DEFAULT_PRESET = PRESETS[0]!.name;

export function defaultStages(preset: string): string {
  return String(presetConfig(preset).stages);
}

export const usePlayground = create<PlaygroundState>()(() => ({
  preset: DEFAULT_PRESET,
  seed: String(presetConfig(DEFAULT_PRESET).seed),
  stages: defaultStages(DEFAULT_PRESET),
  status: 'idle',
  total: 0,
  rows: [],
  info: null,
  error: null,
}));

/** Picking a preset also resets the stage count to that preset's own. */
export function setPreset(preset: string): void {
  usePlayground.setState({ preset, stages: defaultStages(preset), error: null });
}

export function setSeed(seed: string): void {
  usePlayground.setState({ seed });
}

export function setStages(stages: string): void {
  usePlayground.setState({ stages });
}
