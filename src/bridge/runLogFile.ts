/**
 * An imported run, shared like an experiment: as a file (`.satrun.json`: the normalised RunLog,
 * `{"satRunLog": 1, …}`) or, where it fits, as a link (`?run=` + base64url of the deflated file,
 * at most LINK_CHARS). Reading either goes through the same checks as any run log (runLog.ts):
 * capped size, every step a whole number with finite metrics, a specific message otherwise.
 *
 * Not here: reading engines' logs (runLog.ts, logs/), the page's buttons (RunLogView.tsx).
 */
import { deflateSync, inflateSync, strFromU8, strToU8 } from 'fflate';
import { FormatError } from '../core/errors';
import { checkInputSize, LOG_LIMITS } from './limits';
import { checkRunLogCounts, packRunLog, RUN_ENGINES, runSteps, type AgentUpdate, type RunLog, type RunLogFormat, type RunStep } from './runLog';

export const RUN_FILE_EXTENSION = '.satrun.json';
/** The longest `?run=` value a link carries (the data of a longer run travels as a file). */
export const LINK_CHARS = 16_000;

const FORMATS: readonly RunLogFormat[] = ['verl-jsonl', 'verl-console', 'wandb-csv', 'wandb-json', 'sat-trainer'];

/** The run as its file's text (a step per object, as readRunLogFile reads it). */
export function runLogText(log: RunLog): string {
  const { format, engine, name, agents, keys, warnings } = log;
  return JSON.stringify({ satRunLog: 1, format, engine, name, steps: runSteps(log), agents, keys, warnings });
}

/** A saved step's updates, each checked (an agent a whole number under 64, the rest numbers); FormatError naming the step otherwise. */
function savedUpdates(u: unknown, step: number): AgentUpdate[] | undefined {
  if (!Array.isArray(u)) return undefined;
  const num = (x: unknown) => (typeof x === 'number' ? x : x === null ? NaN : undefined);
  return u.map((x) => {
    const o = (x ?? {}) as Record<string, unknown>;
    const [agent, position, klQ, delta, backtracks] = [o.agent, o.position, o.klQ, o.delta, o.backtracks].map(num);
    if (!Number.isInteger(agent) || agent! < 0 || agent! >= 64 || [position, klQ, delta, backtracks].some((v) => v === undefined) || typeof o.violated !== 'boolean') {
      throw new FormatError(`Step ${step} of this saved run has an agent update that is not {agent (0–63), position, klQ, delta, backtracks, violated}. Nothing was read.`);
    }
    return { agent: agent!, position: position!, klQ: klQ!, delta: delta!, backtracks: backtracks!, violated: o.violated };
  });
}

/** True when `text` is a saved run (starts like one). */
export function isRunLogFile(text: string): boolean {
  return /^\s*\{\s*"satRunLog"\s*:/.test(text.slice(0, 64));
}

/** A saved run read back and checked; FormatError with what is wrong otherwise. */
export function readRunLogFile(text: string): RunLog {
  checkInputSize(text, LOG_LIMITS, 'run file');
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(text);
  } catch (e) {
    throw new FormatError(`This run file is not JSON: ${e instanceof Error ? e.message : String(e)}. Nothing was read.`);
  }
  if (o?.satRunLog !== 1) throw new FormatError('This is not a saved run of the playground (it has no "satRunLog": 1). Nothing was read.');
  const steps = o.steps;
  if (!Array.isArray(steps) || steps.length === 0) throw new FormatError('This saved run has no steps. Nothing was read.');
  const clean: RunStep[] = steps.map((s, i) => {
    const st = s as { step?: unknown; metrics?: unknown; updates?: unknown };
    if (!Number.isInteger(st?.step) || st.metrics === null || typeof st.metrics !== 'object') throw new FormatError(`Step ${i + 1} of this saved run has no whole step number or no metrics. Nothing was read.`);
    for (const [k, v] of Object.entries(st.metrics as object)) if (typeof v !== 'number' || !Number.isFinite(v)) throw new FormatError(`Step ${st.step} of this saved run has a metric ${k} that is not a finite number. Nothing was read.`);
    const updates = savedUpdates(st.updates, st.step as number);
    return { step: st.step as number, metrics: st.metrics as Record<string, number>, ...(updates && updates.length > 0 ? { updates } : {}) };
  });
  checkRunLogCounts(clean, 'saved run');
  const format = FORMATS.includes(o.format as RunLogFormat) ? (o.format as RunLogFormat) : 'verl-jsonl';
  const engine = RUN_ENGINES.find((e) => e === o.engine) ?? 'unknown';
  const agents = Number.isInteger(o.agents) && (o.agents as number) >= 0 && (o.agents as number) <= 64 ? (o.agents as number) : 0;
  const name = typeof o.name === 'string' ? o.name.slice(0, 200) : 'saved run';
  return packRunLog({ format, engine, name, agents, warnings: [] }, sortedSteps(clean));
}

/** Steps in order of step number, one per number (a saved run's are; one edited by hand may not be): FormatError otherwise. */
function sortedSteps(steps: RunStep[]): RunStep[] {
  for (let i = 1; i < steps.length; i++) if (steps[i]!.step <= steps[i - 1]!.step) throw new FormatError(`This saved run's step ${steps[i]!.step} comes after step ${steps[i - 1]!.step}; a saved run's steps are in increasing order. Nothing was read.`);
  return steps;
}

const b64url = (bytes: Uint8Array) => {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]!);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
};

/** The `?run=` value for this run, or null when it would be longer than LINK_CHARS. */
export function runLogParam(log: RunLog): string | null {
  const v = b64url(deflateSync(strToU8(runLogText(log)), { level: 9 }));
  return v.length <= LINK_CHARS ? v : null;
}

/** A run from a `?run=` value; FormatError when it is damaged. */
export function readRunLogParam(param: string): RunLog {
  if (param.length > LINK_CHARS || !/^[A-Za-z0-9_-]+$/.test(param)) throw new FormatError('This run link is damaged (not base64url, or too long). Nothing was opened.');
  let text: string;
  try {
    const bin = atob(param.replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    const out = inflateSync(bytes, { out: new Uint8Array(Math.min(LOG_LIMITS.chars, 8 * 1024 * 1024)) });
    text = strFromU8(out);
  } catch {
    throw new FormatError('This run link is damaged (its data does not inflate). Nothing was opened.');
  }
  return readRunLogFile(text);
}
