/**
 * verl's two local loggers, as their code writes them (verl-project/verl @ 1dda039, the same
 * classes in TeamTR @ e78ab03, whose per-agent metrics are prefixed `agent<i>/`):
 *
 *   file     verl/utils/tracking.py FileLogger.log: one line per log call,
 *            orjson.dumps({"step": step, "data": data}) — compact JSON, numbers as numbers, and
 *            NaN / ±inf as null (orjson's rule), which is reported like the console's "nan";
 *   console  verl/utils/logger/aggregate_logger.py LocalLogger.log / concat_dict_to_str:
 *            "step:<step>" then " - <key>:<pprint.pformat(value)>" for every numeric value;
 *            under NumPy 2 a numpy scalar prints as "np.float64(0.25)", which is read too. Lines
 *            may carry a Ray prefix such as "(TaskRunner pid=12) ".
 *
 * Non-numeric values are not metrics and are left out; a line that cannot be read is skipped and
 * named.
 *
 * Not here: detecting the format and merging steps (runLog.ts).
 */
import { checkLineKeys, Warnings, type Parsed, type RunStep } from '../runLog';

/** A finite number, or null. */
function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** The warning for `bad` values of line `i` (0-based) that are not numbers, the same for both loggers. */
function notNumbers(i: number, bad: number): string {
  return `line ${i + 1}: left out ${bad} value${bad > 1 ? 's that are not numbers' : ' that is not a number'}.`;
}

/** verl's file logger: {"step": N, "data": {…}} per line. */
export function parseVerlJsonl(text: string): Parsed {
  const w = new Warnings();
  const steps: RunStep[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    checkLineKeys(line, i);
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      w.add(`line ${i + 1}: not JSON (${line.length > 40 ? `${line.slice(0, 40)}…` : line}).`);
      return;
    }
    const rec = o as { step?: unknown; data?: unknown };
    if (o === null || typeof o !== 'object' || !Number.isInteger(rec.step) || rec.data === null || typeof rec.data !== 'object') {
      w.add(`line ${i + 1}: not a {"step": N, "data": {…}} record.`);
      return;
    }
    const metrics: Record<string, number> = {};
    let bad = 0;
    for (const [k, v] of Object.entries(rec.data as Record<string, unknown>)) {
      const x = num(v);
      if (x !== null) metrics[k] = x;
      else if (v === null) bad++;
    }
    if (bad > 0) w.add(notNumbers(i, bad));
    steps.push({ step: rec.step as number, metrics });
  });
  return w.done(steps);
}

/** One pprint-formatted number: 0.25, 1e-05, -3, nan, inf, np.float64(0.25), np.int64(3), True. */
export function pyNumber(s: string): number | null {
  let t = s.trim();
  const np = /^np\.(?:float|int|uint)\d*\((.*)\)$/.exec(t);
  if (np) t = np[1]!.trim();
  if (t === 'True') return 1;
  if (t === 'False') return 0;
  if (!/^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/.test(t)) return null; // one way to split a digit run: linear
  const x = Number(t);
  return Number.isFinite(x) ? x : null;
}

const CONSOLE = /(?:^|\s)step:(-?\d+)(?: - (.*))?$/;

/** verl's console logger: "step:N - key:value - …" lines; other lines are the run's chatter. */
export function parseVerlConsole(text: string): Parsed {
  const w = new Warnings();
  const steps: RunStep[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const m = CONSOLE.exec(raw.trimEnd());
    if (!m) return;
    const metrics: Record<string, number> = {};
    let bad = 0;
    for (const seg of (m[2] ?? '').split(' - ')) {
      const at = seg.lastIndexOf(':');
      if (at <= 0) {
        bad++;
        continue;
      }
      const x = pyNumber(seg.slice(at + 1));
      if (x === null) bad++;
      else metrics[seg.slice(0, at)] = x;
    }
    if (bad > 0) w.add(notNumbers(i, bad));
    steps.push({ step: Number(m[1]), metrics });
  });
  return w.done(steps);
}
