/**
 * A real run's episodes, from its generation dumps: the `<step>.jsonl` files verl writes under
 * `trainer.rollout_data_dir` and `trainer.validation_data_dir` — one JSON object a line,
 * {"input", "output", "gts", "score", "step", …reward extras} (verl-project/verl @ 1dda039
 * verl/trainer/ppo/ray_trainer.py:454 `_write_generations`, the prompt and response decoded with
 * skip_special_tokens) — and TeamTR's, the same without "gts" (Yydc/TeamTR @ e78ab03
 * verl/trainer/ppo/ray_trainer.py:662). Neither writes the agent: an episode row is credited to
 * agent j when its prompt holds the playground's turn marker <a_j> (the exported contexts end
 * with it, teamPy.ts), else to no agent (verl's one policy). A bad line is skipped and named; the
 * size is capped first (limits.ts: each file's characters, lines and line length, then all the
 * files' characters together), then the rows (every non-blank line, against GENERATION_MAX) before
 * any line is parsed, and a line's keys are counted on its text before JSON.parse; the files reach
 * the check's worker unread (inputJobs.ts: a path in the CLI, a File in the page).
 *
 * Not here: the metric logs (runLog.ts), how a page or the CLI shows the rows.
 */
import { FormatError } from '../core/errors';
import { GENERATION_MAX } from '../core/limits';
import { checkInputSize, LOG_LIMITS } from './limits';

/** Bad lines named at most (the rest are counted): a dump is read without the metric logs' parsers, which the page loads later. */
const MAX_NAMED = 20;

/** One generated reply, as the dump holds it. */
export interface GenerationRow {
  readonly step: number;
  /** The prompt the model saw (its chat template included), and its reply. */
  readonly input: string;
  readonly output: string;
  /** The reward the run gave it (null: the dump's NaN or none). */
  readonly score: number | null;
  /** verl's "gts" (the ground truth), null when the dump has none (TeamTR's). */
  readonly groundTruth: string | null;
  /** The agent whose turn marker ends the prompt, or null (one policy, or no marker). */
  readonly agent: number | null;
}

export interface GenerationDump {
  readonly name: string;
  readonly rows: readonly GenerationRow[];
  /** Steps present, sorted. */
  readonly steps: readonly number[];
  /** Agents credited (0 = none: one policy). */
  readonly agents: number;
  readonly warnings: readonly string[];
}

/** True when `text` starts like a generation dump (its first non-empty line is such a record). */
export function isGenerationDump(text: string): boolean {
  const nl = text.search(/\S/);
  if (nl < 0) return false;
  const end = text.indexOf('\n', nl);
  const first = text.slice(nl, end < 0 ? Math.min(text.length, nl + 1_000_000) : end).trim();
  if (!first.startsWith('{') || !/"output"/.test(first)) return false;
  try {
    return isRecord(JSON.parse(first));
  } catch {
    return false;
  }
}

function isRecord(o: unknown): o is { input: string; output: string; step: number; score?: unknown; gts?: unknown } {
  if (o === null || typeof o !== 'object') return false;
  const r = o as Record<string, unknown>;
  return typeof r.input === 'string' && typeof r.output === 'string' && Number.isInteger(r.step);
}

/**
 * One line as JSON. Python's json.dumps writes a NaN or infinite number as NaN / Infinity, which
 * JSON has not: a line that does not parse is read again with those values as null.
 */
function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return JSON.parse(line.replace(/(": )(NaN|-?Infinity)(?=[,}])/g, '$1null'));
  }
}

/** The agent whose marker <a0>..<a3> comes last in `input`, or null. */
export function agentOfPrompt(input: string): number | null {
  let agent: number | null = null;
  for (const m of input.matchAll(/<a([0-3])>/g)) agent = Number(m[1]);
  return agent;
}

const LIMITS_DOC = '(docs/models.md, "Input limits"). Nothing was read.';

/** Refuses line `i` (from 0) of dump `name` when it holds more `"key":` pairs than one row may (GENERATION_MAX.keysPerRow): counted on the text, before JSON.parse builds an object of them. */
function checkRowKeys(line: string, name: string, i: number): void {
  let n = 0;
  for (let at = line.indexOf('":'); at >= 0; at = line.indexOf('":', at + 2)) {
    if (++n > GENERATION_MAX.keysPerRow) throw new FormatError(`${name} line ${(i + 1).toLocaleString('en')} has more than ${GENERATION_MAX.keysPerRow.toLocaleString('en')} keys, the most one generation row may have ${LIMITS_DOC}`);
  }
}

/** Lines of `text` holding anything but blanks and control characters (so at least every line that trims to text). */
function nonBlankLines(text: string): number {
  let n = 0;
  let blank = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      if (!blank) n++;
      blank = true;
    } else if (c > 32) blank = false;
  }
  return blank ? n : n + 1;
}

/** Reads one or more dump files (header). Throws FormatError when no file has a readable row, or when the files pass a cap. */
export function readGenerations(files: readonly { readonly name: string; readonly text: string }[]): GenerationDump {
  const chars = files.reduce((n, f) => n + f.text.length, 0);
  if (chars > GENERATION_MAX.chars) throw new FormatError(`These ${files.length} generation dump files hold ${chars.toLocaleString('en')} characters together; the playground reads at most ${GENERATION_MAX.chars.toLocaleString('en')} in one import (import fewer steps' files) ${LIMITS_DOC}`);
  for (const f of files) checkInputSize(f.text, LOG_LIMITS, 'generation dump');
  const named: string[] = [];
  let bad = 0;
  const warn = (msg: string) => {
    if (bad++ < MAX_NAMED) named.push(msg);
  };
  // Rows counted before any line is parsed: each non-blank line is one (a blank line holds none).
  const records = files.reduce((n, f) => n + nonBlankLines(f.text), 0);
  if (records > GENERATION_MAX.rows) throw new FormatError(`“${files.map((g) => g.name).join(', ')}” ${files.length === 1 ? 'holds' : 'hold'} ${records.toLocaleString('en')} non-blank lines, more than the ${GENERATION_MAX.rows.toLocaleString('en')} generation rows one import may have (import fewer steps' files) ${LIMITS_DOC}`);
  const rows: GenerationRow[] = [];
  for (const f of files) {
    // line by line, without an array of all of them
    for (let start = 0, i = 0; start <= f.text.length; i++) {
      const nl = f.text.indexOf('\n', start);
      const end = nl < 0 ? f.text.length : nl;
      const line = f.text.slice(start, end).trim();
      start = end + 1;
      if (line === '') continue;
      checkRowKeys(line, f.name, i);
      let o: unknown;
      try {
        o = parseLine(line);
      } catch {
        warn(`${f.name} line ${i + 1}: not JSON.`);
        continue;
      }
      if (!isRecord(o)) {
        warn(`${f.name} line ${i + 1}: not a {"input", "output", "step", …} record.`);
        continue;
      }
      const score = typeof o.score === 'number' && Number.isFinite(o.score) ? o.score : null;
      if (score === null) warn(`${f.name} line ${i + 1}: its score is not a number; the row is kept without one.`);
      const gts = o.gts === undefined || o.gts === null ? null : typeof o.gts === 'string' ? o.gts : JSON.stringify(o.gts);
      rows.push({ step: o.step, input: o.input, output: o.output, score, groundTruth: gts, agent: agentOfPrompt(o.input) });
    }
  }
  const name = files.map((f) => f.name).join(', ');
  if (rows.length === 0) {
    const why = named.length > 0 ? ` First problem: ${named[0]}` : '';
    throw new FormatError(`“${name}” holds no generation row (verl's trainer.rollout_data_dir / validation_data_dir files: {"input", "output", "score", "step"} per line).${why} Nothing was read.`);
  }
  rows.sort((a, b) => a.step - b.step);
  const steps = [...new Set(rows.map((r) => r.step))];
  const agents = rows.reduce((n, r) => (r.agent === null ? n : Math.max(n, r.agent + 1)), 0);
  const warnings = bad > named.length ? [...named, `… and ${bad - named.length} more.`] : named;
  return { name, rows, steps, agents, warnings };
}

/** Which rows to show: a step, an agent, text in the prompt or reply; a page of `size`. */
export interface GenerationFilter {
  readonly step?: number;
  readonly agent?: number;
  readonly text?: string;
  readonly page?: number;
  readonly size?: number;
}

/** The rows `filter` keeps, one page of them, and how many it keeps in all. */
export function generationPage(dump: GenerationDump, filter: GenerationFilter = {}): { readonly rows: readonly GenerationRow[]; readonly total: number; readonly pages: number } {
  const size = Math.max(1, filter.size ?? 20);
  const needle = filter.text?.toLowerCase() ?? '';
  const kept = dump.rows.filter((r) => (filter.step === undefined || r.step === filter.step) && (filter.agent === undefined || r.agent === filter.agent) && (needle === '' || r.input.toLowerCase().includes(needle) || r.output.toLowerCase().includes(needle)));
  const pages = Math.max(1, Math.ceil(kept.length / size));
  const page = Math.min(Math.max(0, filter.page ?? 0), pages - 1);
  return { rows: kept.slice(page * size, (page + 1) * size), total: kept.length, pages };
}

/** Per step and agent (null: one policy): the rows and their mean score. */
export function generationSummary(dump: GenerationDump): { readonly step: number; readonly agent: number | null; readonly rows: number; readonly meanScore: number | null }[] {
  const by = new Map<string, { step: number; agent: number | null; rows: number; sum: number; scored: number }>();
  for (const r of dump.rows) {
    const k = `${r.step}|${r.agent}`;
    const cur = by.get(k) ?? { step: r.step, agent: r.agent, rows: 0, sum: 0, scored: 0 };
    cur.rows++;
    if (r.score !== null) {
      cur.sum += r.score;
      cur.scored++;
    }
    by.set(k, cur);
  }
  return [...by.values()].sort((a, b) => a.step - b.step || (a.agent ?? -1) - (b.agent ?? -1)).map((v) => ({ step: v.step, agent: v.agent, rows: v.rows, meanScore: v.scored > 0 ? v.sum / v.scored : null }));
}
