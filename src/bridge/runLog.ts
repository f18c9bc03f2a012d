/**
 * A real run's metric log, normalised: whichever engine and logger wrote it, an imported log
 * becomes one `RunLog` — steps in order, metrics under the engine's own key names and, where the
 * log says so, each update's agent order and KL against δ. `readRunLog` finds the format, caps the
 * size first (limits.ts), caps what it parsed (RUN_LOG_MAX) and skips a bad line, naming it in `warnings`, so a partial log opens; a
 * file with no readable step is a FormatError describing the formats.
 *
 * A RunLog is held in columns — the step numbers, one Float64Array per metric key, the updates as
 * rows of numbers — so it leaves the check's worker as a few buffers transferred to the page, not
 * as an object per step copied there: its memory is 8 bytes a cell, bounded by RUN_LOG_MAX.cells.
 * The parsers build `RunStep` objects (in the worker); `packRunLog` turns them into columns and
 * `runSteps` back (a saved run's file, the tests).
 *
 * Not here: the formats' parsers (logs/, each citing the code that writes it), the charts' rows
 * (runLogSeries.ts), the page (RunLogView.tsx).
 */
import { FormatError } from '../core/errors';
import { RUN_LOG_MAX } from '../core/limits';
import { checkInputSize, LOG_LIMITS } from './limits';
import { parseSatTrainerLog } from './logs/satTrainer';
import { parseVerlConsole, parseVerlJsonl } from './logs/verl';
import { parseWandbCsv, parseWandbJson } from './logs/wandb';
import { isRunLogFile, readRunLogFile } from './runLogFile';

/**
 * verl-jsonl / verl-console: verl's and TeamTR's file and console loggers (logs/verl.ts);
 * wandb-csv / wandb-json: a W&B history with `_step` (logs/wandb.ts); sat-trainer: the SAT authors'
 * printed stage log and/or stage_log.jsonl (logs/satTrainer.ts). The playground's own saved run
 * (runLogFile.ts) opens as it was saved.
 */
export type RunLogFormat = 'verl-jsonl' | 'verl-console' | 'wandb-csv' | 'wandb-json' | 'sat-trainer';

/** Who wrote a log (RunLog.engine). */
export type RunEngine = 'verl' | 'verlTeam' | 'teamtr' | 'satTrainer' | 'unknown';
export const RUN_ENGINES: readonly RunEngine[] = ['verl', 'verlTeam', 'teamtr', 'satTrainer', 'unknown'];

/** One agent's update within a step, as the SAT authors' trainer prints it (or, for a verl team log, as the order of its keys tells: no KL quantile or δ, NaN). */
export interface AgentUpdate {
  readonly agent: number;
  /** Position in the step's order σ, from 0. */
  readonly position: number;
  /** The KL quantile measured after the last try, and the radius it was held against. */
  readonly klQ: number;
  readonly delta: number;
  /** Tries that exceeded δ and were undone (backtracks). */
  readonly backtracks: number;
  /** The last try still exceeded δ (the retries ran out). */
  readonly violated: boolean;
}

export interface RunStep {
  readonly step: number;
  readonly metrics: Readonly<Record<string, number>>;
  /** Agent updates in order, when the log has them (the SAT authors' trainer). */
  readonly updates?: readonly AgentUpdate[];
}

export interface RunLog {
  readonly format: RunLogFormat;
  /**
   * The engine that wrote it, as far as the keys tell: verlTeam, the team log of the exported verl
   * driver (src/bridge/teamPy.ts team_log: verl's file-log lines whose every key is agent<j>/… or
   * val-…); teamtr, other logs with agent<i>/ keys.
   */
  readonly engine: RunEngine;
  /** A name for people: the file's. */
  readonly name: string;
  /** The step numbers, ascending (whole numbers). */
  readonly steps: Float64Array;
  /** Agents the log has per-agent records for (0 = none: one policy, or not said). */
  readonly agents: number;
  /** Every metric key seen, sorted. */
  readonly keys: readonly string[];
  /** columns[k][i]: metric keys[k] at steps[i]; NaN where that step did not log it (a logged metric is finite). */
  readonly columns: readonly Float64Array[];
  /** Agent updates, UPDATE_FIELDS numbers each (UPDATE_FIELD_NAMES), in their steps' order. */
  readonly updates: Float64Array;
  /** Lines or rows that were skipped, each saying where and why (at most MAX_WARNINGS). */
  readonly warnings: readonly string[];
}

export const MAX_WARNINGS = 20;

/** The numbers of one update in RunLog.updates: its step's index in `steps`, then AgentUpdate's fields (violated 1 or 0). */
export const UPDATE_FIELD_NAMES = ['stepIndex', 'agent', 'position', 'klQ', 'delta', 'backtracks', 'violated'] as const;
export const UPDATE_FIELDS = UPDATE_FIELD_NAMES.length;

/** The column of metric `key`, or null when the log has no such key (keys are sorted: a binary search). */
export function column(log: RunLog, key: string): Float64Array | null {
  let lo = 0;
  let hi = log.keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const k = log.keys[mid]!;
    if (k === key) return log.columns[mid]!;
    if (k < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return null;
}

/** The updates as objects, by the index of their step in `steps` (an empty slot: none), each step's in their order in the log. */
export function updatesByStep(log: RunLog): AgentUpdate[][] {
  const byStep: AgentUpdate[][] = [];
  const u = log.updates;
  for (let r = 0; r < u.length; r += UPDATE_FIELDS) {
    (byStep[u[r]!] ??= []).push({ agent: u[r + 1]!, position: u[r + 2]!, klQ: u[r + 3]!, delta: u[r + 4]!, backtracks: u[r + 5]!, violated: u[r + 6] === 1 });
  }
  return byStep;
}

/** The run's steps as objects (a step's metrics those it logged), as the parsers and a saved run's file have them. */
export function runSteps(log: RunLog): RunStep[] {
  const byStep = updatesByStep(log);
  return Array.from(log.steps, (step, i) => {
    const metrics: Record<string, number> = {};
    log.keys.forEach((k, c) => {
      const v = log.columns[c]![i]!;
      if (!Number.isNaN(v)) metrics[k] = v;
    });
    return byStep[i] ? { step, metrics, updates: byStep[i] } : { step, metrics };
  });
}

/**
 * The columns of `steps` (sorted, one per step number, as mergeSteps leaves them): refused past
 * RUN_LOG_MAX.cells before a column is allocated.
 */
export function packRunLog(meta: Omit<RunLog, 'steps' | 'keys' | 'columns' | 'updates'>, steps: readonly RunStep[]): RunLog {
  const keySet = new Set<string>();
  let nUpdates = 0;
  for (const s of steps) {
    for (const k in s.metrics) keySet.add(k);
    nUpdates += s.updates?.length ?? 0;
  }
  const keys = [...keySet].sort();
  if (keys.length * steps.length > RUN_LOG_MAX.cells) {
    throw new FormatError(`“${meta.name}” has ${steps.length.toLocaleString('en')} steps × ${keys.length.toLocaleString('en')} metric keys, more than the ${RUN_LOG_MAX.cells.toLocaleString('en')} values a run log's charts may hold (docs/models.md, "Input limits"). Nothing was read.`);
  }
  const index = new Map(keys.map((k, c) => [k, c]));
  const columns = keys.map(() => new Float64Array(steps.length).fill(NaN));
  const stepArr = new Float64Array(steps.length);
  const updates = new Float64Array(nUpdates * UPDATE_FIELDS);
  let r = 0;
  steps.forEach((s, i) => {
    stepArr[i] = s.step;
    for (const k in s.metrics) columns[index.get(k)!]![i] = s.metrics[k]!;
    for (const x of s.updates ?? []) {
      updates.set([i, x.agent, x.position, x.klQ, x.delta, x.backtracks, x.violated ? 1 : 0], r);
      r += UPDATE_FIELDS;
    }
  });
  return { ...meta, steps: stepArr, keys, columns, updates };
}

/** The buffers of a RunLog, to transfer it (not copy it) to another thread. */
export function runLogBuffers(log: RunLog): ArrayBuffer[] {
  return [log.steps, log.updates, ...log.columns].map((a) => a.buffer as ArrayBuffer);
}

/** What a parser returns: steps (maybe unsorted, maybe repeated) and what it skipped. */
export interface Parsed {
  readonly steps: RunStep[];
  readonly warnings: string[];
  readonly skipped: number;
}

/**
 * Refuses line `i` (from 0) of a log when it holds more `"key":` pairs than one step may have
 * (RUN_LOG_MAX.keysPerStep): counted on the text, before JSON.parse builds an object of them.
 */
export function checkLineKeys(line: string, i: number): void {
  let n = 0;
  for (let at = line.indexOf('":'); at >= 0; at = line.indexOf('":', at + 2)) {
    if (++n > RUN_LOG_MAX.keysPerStep) throw new FormatError(`Line ${(i + 1).toLocaleString('en')} of this run log has more than ${RUN_LOG_MAX.keysPerStep.toLocaleString('en')} keys, the most one step may have (docs/models.md, "Input limits"). Nothing was read.`);
  }
}

/** Collects warnings up to MAX_WARNINGS, counting the rest. */
export class Warnings {
  readonly list: string[] = [];
  skipped = 0;
  add(msg: string): void {
    this.skipped++;
    if (this.list.length < MAX_WARNINGS) this.list.push(msg);
  }
  done(steps: RunStep[]): Parsed {
    return { steps, warnings: this.list, skipped: this.skipped };
  }
}

/** The format of `text`, from its first non-empty lines and the file name, or null. */
export function detectFormat(text: string, fileName = ''): RunLogFormat | null {
  const head = text.slice(0, 64 * 1024);
  const lines = head.split(/\r?\n/).filter((l) => l.trim() !== '');
  const first = lines[0]?.trim() ?? '';
  if (/^=+$/.test(first) && /SAT training:/.test(head)) return 'sat-trainer';
  if (/^(=== Stage \d+\/\d+ ===|\[Stage\] )/m.test(head) || /^\{"stage": ?\d+.*"lower_bound"/.test(first)) return 'sat-trainer';
  if (/^\{"step": ?-?\d+, ?"data": ?\{/.test(first)) return 'verl-jsonl';
  if (first.startsWith('[') || (first.startsWith('{') && /"_step"/.test(first))) return 'wandb-json';
  if (/(^|\s)step:\d+( - |$)/m.test(head)) return 'verl-console';
  if (/\.csv$/i.test(fileName) || (/,/.test(first) && /(^|,)"?_step"?(,|$)/.test(first))) return 'wandb-csv';
  return null;
}

const PARSERS: Readonly<Record<RunLogFormat, (text: string) => Parsed>> = {
  'verl-jsonl': parseVerlJsonl,
  'verl-console': parseVerlConsole,
  'wandb-csv': parseWandbCsv,
  'wandb-json': parseWandbJson,
  'sat-trainer': parseSatTrainerLog,
};

/** Steps sorted by step number; a step logged twice (validation and training lines) is merged. */
function mergeSteps(steps: readonly RunStep[]): RunStep[] {
  const by = new Map<number, { metrics: Record<string, number>; updates?: readonly AgentUpdate[] }>();
  for (const s of steps) {
    const cur = by.get(s.step) ?? { metrics: {} };
    Object.assign(cur.metrics, s.metrics);
    if (s.updates) cur.updates = s.updates;
    by.set(s.step, cur);
  }
  return [...by.entries()].sort((a, b) => a[0] - b[0]).map(([step, v]) => ({ step, metrics: v.metrics, ...(v.updates ? { updates: v.updates } : {}) }));
}

const AGENT_KEY = /^agent(\d+)\//;

/** Whether `steps` are a verl team log (RunLog.engine): verl's file log with agent keys, and no key but agent<j>/… and val-…. */
function isVerlTeamLog(format: RunLogFormat, agents: number, steps: readonly RunStep[]): boolean {
  return format === 'verl-jsonl' && agents > 0 && steps.every((s) => Object.keys(s.metrics).every((k) => AGENT_KEY.test(k) || k.startsWith('val-')));
}

/**
 * A verl team log's steps with their updates: the exported driver writes each stage's line run by
 * run, every key of agent j's run as agent<j>/… (teamPy.ts team_log), so the order in which the
 * agents' keys first appear in a step's line is the order they were updated, whatever the team's
 * order was. No KL quantile or δ (NaN), no backtracks.
 */
function verlTeamUpdates(steps: readonly RunStep[]): RunStep[] {
  return steps.map((s) => {
    const order: number[] = [];
    for (const k of Object.keys(s.metrics)) {
      const m = AGENT_KEY.exec(k);
      if (m && !order.includes(Number(m[1]))) order.push(Number(m[1]));
    }
    return order.length === 0 ? s : { ...s, updates: order.map((agent, position) => ({ agent, position, klQ: NaN, delta: NaN, backtracks: 0, violated: false })) };
  });
}

/** Agents with per-agent keys (`agent<i>/…`) or updates. */
function agentCount(steps: readonly RunStep[]): number {
  let n = 0;
  for (const s of steps) {
    for (const k of Object.keys(s.metrics)) {
      const m = AGENT_KEY.exec(k);
      if (m) n = Math.max(n, Number(m[1]) + 1);
    }
    for (const u of s.updates ?? []) n = Math.max(n, u.agent + 1);
  }
  return n;
}

/**
 * Refuses a parsed log past RUN_LOG_MAX (steps, metrics in one step, distinct keys), so what leaves
 * the check's worker for the page's charts stays the size of a real run's. Stops at the first cap passed.
 */
export function checkRunLogCounts(steps: readonly RunStep[], name: string): void {
  const tail = `(docs/models.md, "Input limits"). Nothing was read.`;
  if (steps.length > RUN_LOG_MAX.steps) throw new FormatError(`“${name}” has ${steps.length.toLocaleString('en')} steps, more than the ${RUN_LOG_MAX.steps.toLocaleString('en')} a run log may have ${tail}`);
  const keys = new Set<string>();
  for (const s of steps) {
    let n = 0;
    for (const k in s.metrics) {
      if (++n > RUN_LOG_MAX.keysPerStep) throw new FormatError(`“${name}”: step ${s.step} has more than ${RUN_LOG_MAX.keysPerStep.toLocaleString('en')} metrics, the most one step may have ${tail}`);
      if (keys.size <= RUN_LOG_MAX.keys) keys.add(k);
    }
    if (keys.size > RUN_LOG_MAX.keys) throw new FormatError(`“${name}” has more than ${RUN_LOG_MAX.keys.toLocaleString('en')} distinct metric keys, the most a run log may have ${tail}`);
  }
}

/** Reads a run log (header). Throws FormatError only when nothing in it can be read. */
export function readRunLog(text: string, fileName = 'run log'): RunLog {
  checkInputSize(text, LOG_LIMITS, 'run log');
  if (isRunLogFile(text)) return readRunLogFile(text);
  const format = detectFormat(text, fileName);
  if (!format) {
    throw new FormatError(
      `“${fileName}” is not a run log the playground reads: expected verl's file logger (JSON lines {"step": N, "data": {…}}), its console lines ("step:N - key:value - …"), a W&B history (CSV with a _step column, or JSON rows with _step) or the SAT authors' trainer's output ("=== Stage k/N ===" or stage_log.jsonl). Nothing was read.`,
    );
  }
  const parsed = PARSERS[format](text);
  checkRunLogCounts(parsed.steps, fileName);
  const steps = mergeSteps(parsed.steps);
  if (steps.length === 0) {
    const why = parsed.warnings.length > 0 ? ` First problem: ${parsed.warnings[0]}` : '';
    throw new FormatError(`“${fileName}” looks like ${format} but has no readable step.${why} Nothing was read.`);
  }
  const agents = agentCount(steps);
  const actor = steps.some((s) => Object.keys(s.metrics).some((k) => k.startsWith('actor/')));
  const team = isVerlTeamLog(format, agents, steps);
  const engine: RunEngine = format === 'sat-trainer' ? 'satTrainer' : team ? 'verlTeam' : agents > 0 ? 'teamtr' : format.startsWith('verl') || actor ? 'verl' : 'unknown';
  const warnings = parsed.skipped > parsed.warnings.length ? [...parsed.warnings, `… and ${parsed.skipped - parsed.warnings.length} more skipped.`] : parsed.warnings;
  return packRunLog({ format, engine, name: fileName, agents, warnings }, team ? verlTeamUpdates(steps) : steps);
}
