/**
 * A Weights & Biases run history, as W&B exports it: the run page's "Export as CSV" (a header
 * row of metric keys with `_step`, `_runtime`, `_timestamp` among them, one row per logged step,
 * empty cells where a key was not logged), or the history as JSON — an array of row objects,
 * or one object a line (the run's wandb-history.jsonl), each with `_step`. verl logs to W&B with
 * the same keys as its file logger (verl/utils/tracking.py Tracking.log → wandb.log(data, step)).
 *
 * W&B's own bookkeeping columns (names starting with "_") are not metrics. A row without a
 * readable `_step` is skipped and named.
 *
 * Not here: detecting the format and merging steps (runLog.ts).
 */
import { checkLineKeys, Warnings, type Parsed, type RunStep } from '../runLog';

/** RFC 4180 fields of one CSV text: quoted fields may hold commas, quotes ("") and newlines. */
export function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((r) => !(r.length === 1 && r[0] === ''));
}

function metricsOf(entries: Iterable<[string, unknown]>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of entries) {
    if (k.startsWith('_')) continue;
    const x = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
    if (Number.isFinite(x)) out[k] = x;
  }
  return out;
}

/** A W&B history exported as CSV. */
export function parseWandbCsv(text: string): Parsed {
  const w = new Warnings();
  const rows = csvRows(text);
  const head = rows[0] ?? [];
  const at = head.indexOf('_step');
  if (at < 0) {
    w.add('the header has no _step column (export the run history from W&B, which includes it).');
    return w.done([]);
  }
  const steps: RunStep[] = [];
  rows.slice(1).forEach((r, i) => {
    const step = Number(r[at]);
    if (r[at] === undefined || r[at]!.trim() === '' || !Number.isInteger(step)) {
      w.add(`row ${i + 2}: no whole _step (${JSON.stringify(r[at] ?? '')}).`);
      return;
    }
    steps.push({ step, metrics: metricsOf(head.map((k, j) => [k, r[j]] as [string, unknown])) });
  });
  return w.done(steps);
}

/** A W&B history as a JSON array of rows, or as JSON lines. */
export function parseWandbJson(text: string): Parsed {
  const w = new Warnings();
  let rows: unknown[];
  const t = text.trim();
  if (t.startsWith('[')) {
    try {
      const all = JSON.parse(t);
      rows = Array.isArray(all) ? all : [];
    } catch (e) {
      w.add(`not JSON: ${e instanceof Error ? e.message : String(e)}.`);
      return w.done([]);
    }
  } else {
    rows = [];
    t.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      checkLineKeys(line, i);
      try {
        rows.push(JSON.parse(line));
      } catch {
        w.add(`line ${i + 1}: not JSON.`);
        rows.push(null);
      }
    });
  }
  const steps: RunStep[] = [];
  rows.forEach((r, i) => {
    if (r === null) return;
    const step = (r as { _step?: unknown })?._step;
    if (typeof r !== 'object' || !Number.isInteger(step)) {
      w.add(`row ${i + 1}: no whole _step.`);
      return;
    }
    steps.push({ step: step as number, metrics: metricsOf(Object.entries(r as object)) });
  });
  return w.done(steps);
}
