/**
 * The page's state (zustand: one store, a slice per concern, components reading it with narrow
 * selectors): one store built from four slices —
 *
 *   experiment  what the user set up: preset, the settings form (as typed), hidden controls
 *   run         what the session is doing: status, progress of long work, speed, the team's agents
 *   metrics     what came out: finished stages, the agent steps of the stage in progress, the
 *               step in view, order comparisons and δ sweeps
 *   ui          what the page says: the error banner and passing notices
 *
 * Components read with narrow selectors (`usePlayground((s) => s.stages)`); everything that talks
 * to workers lives in a Session (../session.ts), which writes here with setState. The page has one
 * store, `usePlayground`; `createPlaygroundStore` makes another (a test's second session).
 *
 * The stage history lives here only: `stages` (finished) and `partial` (the stage in progress).
 *
 * Not here: running anything, or formatting.
 */
import { create } from 'zustand';
import { CONFIG, CONFIG_KEYS, type Config, type ConfigKey, type Field } from '../../sat/config';
import { PRESETS, presetConfig } from '../../sat/presets';
import type { DeltaSweepResult } from '../../studies/deltaSweep';
import type { AgentStepRecord, StageRecord } from '../../sat/stage';
import type { AgentInfo } from '../../sat/types';
import type { TranscriptBatch } from '../charts/series';
import type { GameFrame } from '../gameFrame';
import type { BackendLine } from '../backendLine';
import type { StepRef } from '../stepRef';
import type { QuantKind } from '../../model/quant';
import type { SeatSpeed } from '../../workers/agentApi';
import { rememberedProjector, rememberProjector } from '../projector';

/** The settings form: every config key as the text the user typed (checked by parseConfig on apply). */
export type Form = Record<ConfigKey, string>;

export interface ExperimentSlice {
  preset: string;
  /** The form as edited. */
  form: Form;
  /** The form as last applied (the running experiment's settings); `form !== applied` ⇒ unapplied edits. */
  applied: Form;
  /** Controls hidden by a share link's `<key>_hide` flags. */
  hide: readonly string[];
  /** A teacher's own question from a lesson link (shown above the preset's), or null. */
  question: string | null;
  /** The run before the last Apply on the same preset, drawn dashed on the J chart until dismissed. */
  previous: SeriesRun | null;
}

export type RunStatus =
  | 'idle' // nothing built yet
  | 'loading' // building the team (loading models, evaluating J₀) or replaying a link
  | 'ready' // waiting for the user
  | 'busy' // one step in progress
  | 'running' // Run ▶ loop
  | 'done' // all configured stages finished
  | 'error'; // the last action failed; the experiment so far is kept

/** Long work shown with a bar and a Cancel button. */
export interface Progress {
  readonly label: string;
  readonly done: number;
  readonly total: number;
  readonly cancellable: boolean;
  /** Where the pace for the time left is measured from (performance.now() and `done` then); absent, from when the bar appeared and 0. */
  readonly pace?: { readonly since: number; readonly done: number };
  /** `done` and `total` are units of work, not items: the bar says a percentage instead of "done of total". */
  readonly units?: boolean;
}

/** One agent as the page shows it: who it is and where it runs. */
export interface AgentView extends AgentInfo {
  readonly index: number;
  /** Bytes of parameters + optimizer state held by its worker (host copy). */
  readonly memoryBytes?: number;
}

/**
 * A language seat's own checkpoint (src/app/hfFiles.ts; docs/models.md "Your own checkpoint"):
 * seated, or named by a share link but not in this browser's storage (`missing`).
 */
export interface SeatView {
  readonly agent: number;
  /** Folder name and short hash, e.g. "SmolLM-135M@1a2b3c4d". */
  readonly name: string;
  /** hfFolderHash of its files (hex). */
  readonly hash: string;
  readonly missing?: boolean;
  /** How its weights are stored (q8, q4, f32): the card's choice, or what the link asks for. */
  readonly quant?: QuantKind;
  /** The checkpoint's own parameters (its config). */
  readonly params?: number;
  /** Bytes kept in this browser's storage, or why they are not. */
  readonly stored?: number | string;
  /** The memory estimate made before the load: its total ("14.9 MiB") and every part, in words. */
  readonly needs?: string;
  readonly estimate?: string;
  /** The estimate's total for each quantization the card offers (the choice's labels). */
  readonly needsBy?: Readonly<Partial<Record<QuantKind, string>>>;
  /** An ONNX model folder's seat: its .onnx file and whether it trains or is frozen. */
  readonly onnx?: { readonly file: string; readonly mode: 'trainable' | 'frozen' };
  /** The .onnx files of the seated ONNX folder when it has more than one (the card's Graph list). */
  readonly onnxGraphs?: readonly string[];
  /** Its sampling measured in its worker since the team was built (agentApi.ts SeatSpeed): the card's tokens/s. */
  readonly speed?: SeatSpeed;
}

export type Speed = 'slow' | 'normal' | 'fast';

export interface RunSlice {
  status: RunStatus;
  progress: Progress | null;
  speed: Speed;
  agents: readonly AgentView[];
  /** Seats holding (or, from a link, needing) a checkpoint of their own. */
  seats: readonly SeatView[];
  /** Where the agents run, the whole sentence (the header's hover). */
  backend: string;
  /** The header's short line and its warning (backendLine.ts); null while the team is built. */
  backendLine: BackendLine | null;
  /** The applied config (null until the first experiment is built). */
  config: Config | null;
}

export interface SeriesRun {
  readonly label: string;
  readonly stages: readonly StageRecord[];
}

export interface MetricsSlice {
  /** Team J before stage 1 and its CI half-width. */
  j0: { J: number; ci: number } | null;
  stages: readonly StageRecord[];
  /** Agent steps of the stage in progress (empty between stages). */
  partial: readonly AgentStepRecord[];
  /** The agent step in view; null = the latest. */
  selected: StepRef | null;
  /** The same seed under other update orders (order comparison chart). */
  orders: readonly SeriesRun[];
  /** The δ sweep's result (src/studies/deltaSweep.ts: per δ mean KL/δ and violation rate, the fit and its CI), or null. */
  sweep: DeltaSweepResult | null;
  /** Language tasks: a few episodes of the batch each agent step trained on (the latest ones). */
  transcripts: readonly TranscriptBatch[];
  /** Table games: what the game view draws after each agent step (gameFrame.ts), oldest first. */
  frames: readonly GameFrame[];
  /** The same config and seed run with scheme = simultaneous, overlaid on the J chart (null: not run). */
  simultaneous: SeriesRun | null;
  /** R_max − R_min of the task (a bound below −span is vacuous) and the horizon H. */
  span: number;
  horizon: number;
}

export interface UiSlice {
  /** A message a person can act on; shown in a banner until dismissed. */
  error: string | null;
  /** A passing note (link copied, state restored, …). */
  notice: string | null;
  /** Projector mode (projector.ts): larger text, one-line header, the question on the first screen. */
  projector: boolean;
}

export type PlaygroundState = ExperimentSlice & RunSlice & MetricsSlice & UiSlice;

/** A config value as the form shows it. */
export function fieldText(f: Field, v: unknown): string {
  if (Array.isArray(v)) return v.join(',');
  if (f.type === 'bool') return v ? 'true' : 'false';
  return String(v);
}

export function formOf(cfg: Config): Form {
  const out = {} as Form;
  for (const k of CONFIG_KEYS) out[k] = fieldText(CONFIG[k], cfg[k]);
  return out;
}

export const DEFAULT_PRESET = PRESETS[0]!.name;

const initialForm = formOf(presetConfig(DEFAULT_PRESET));

export const emptyMetrics = (): MetricsSlice => ({ j0: null, stages: [], partial: [], selected: null, orders: [], sweep: null, transcripts: [], frames: [], simultaneous: null, span: 0, horizon: 1 });

/** Transcript batches kept (the latest agent steps'); older ones are dropped to bound memory. */
export const MAX_TRANSCRIPT_BATCHES = 60;

/** A fresh store in its initial state. */
export function createPlaygroundStore() {
  return create<PlaygroundState>()(() => ({
    // experiment
    preset: DEFAULT_PRESET,
    form: initialForm,
    applied: initialForm,
    hide: [],
    question: null,
    previous: null,
    // run
    status: 'idle',
    progress: null,
    speed: 'normal',
    agents: [],
    seats: [],
    backend: 'starting…',
    backendLine: null,
    config: null,
    // metrics
    ...emptyMetrics(),
    // ui
    error: null,
    notice: null,
    projector: rememberedProjector(),
  }));
}

/** The page's store. */
export const usePlayground = createPlaygroundStore();

/** Form edits (no effect on the running experiment until applied). */
export function setField(key: ConfigKey, text: string): void {
  usePlayground.setState((s) => ({ form: { ...s.form, [key]: text } }));
}

/** Projector mode on or off; `remember` (the header's toggle, not a link) keeps it for the next visit. */
export function setProjector(on: boolean, remember = true): void {
  usePlayground.setState({ projector: on });
  if (remember) rememberProjector(on);
}

export function setSpeed(speed: Speed): void {
  usePlayground.setState({ speed });
}

export function select(sel: StepRef | null): void {
  usePlayground.setState({ selected: sel });
}

export function dismissError(): void {
  usePlayground.setState({ error: null });
}

/** True when the form differs from the running experiment's settings. */
export function isDirty(s: Pick<PlaygroundState, 'form' | 'applied'>): boolean {
  return CONFIG_KEYS.some((k) => s.form[k] !== s.applied[k]);
}
