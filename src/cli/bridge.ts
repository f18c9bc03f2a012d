/**
 * The command line's side of the bridge to real engines: `--export-recipe FILE` writes every file
 * of the recipe (src/bridge/recipe.ts) next to FILE, and `--import-log FILE` reads a real run's
 * log (src/bridge/runLog.ts) and prints what the page's charts would show, as tables — or, given
 * a generation dump (a `<step>.jsonl` of verl's rollout_data_dir, or the folder of them), reads it
 * through the budgeted input check (src/bridge/generations.ts) and prints its episodes.
 *
 * Not here: the mappings and parsers themselves (src/bridge).
 */
import { mkdirSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FormatError, SatError } from '../core/errors';
import { checkFileBytes, LOG_LIMITS } from '../bridge/limits';
import { escapeControl } from '../core/text';
import { isLlmTask, type Config } from '../sat/config';
import { planLlm, planTabular } from '../sat/experiment';
import { DEFAULT_MODELS, recipe, recipeSummary, type ModelMap } from '../bridge/recipe';
import { engineLabel, runClip, runJ, runKl, runTimeline } from '../bridge/runLogSeries';
import { generationPage, generationSummary, type GenerationDump } from '../bridge/generations';
import { cliCheck } from './inputCheck';
import type { CheckedPath } from '../workers/inputJobs';

/** Writes the recipe's files next to `file` and says what was written and what was refused. */
export function exportRecipe(file: string, cfg: Config, hf: Partial<ModelMap>): void {
  // A_max of aMax = 0 is the task's reward range (read from its plan; no model is loaded).
  const range = isLlmTask(cfg.task) ? planLlm(cfg).aMax : planTabular(cfg).aMax;
  const r = recipe(cfg, { ...DEFAULT_MODELS, ...hf }, cfg.aMax > 0 ? cfg.aMax : range, file);
  const dir = dirname(file);
  for (const f of r.files) {
    const path = join(dir, f.path);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, f.text);
  }
  const written = r.files.map((f) => f.path).filter((p) => !p.includes('/'));
  const data = r.files.filter((f) => f.path.includes('/'));
  const rows = data.filter((f) => f.path.endsWith('.jsonl')).length;
  const modules = data.filter((f) => !f.path.endsWith('.jsonl')).map((f) => f.path.split('/').pop()!);
  if (r.files.length === 0) console.log(`nothing written in ${dir}: every engine refused these settings (the reasons below; docs/real-run.md)`);
  else console.log(`wrote in ${dir}: ${written.join(', ')}${data.length > 0 ? `, and ${data.length} data files under ${data[0]!.path.split('/')[0]}/ (${rows} datasets; ${modules.join(', ')})` : ''}`);
  for (const line of recipeSummary(r)) console.log(`  ${line}`);
  console.log(`${r.unmapped.length} settings have no counterpart in any engine (docs/real-run.md says why): ${r.unmapped.join(', ')}`);
}

const f4 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '—' : Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(2) : x.toFixed(4));

/** The files of a generation dump folder (`<step>.jsonl`, in step order), or `file` itself. */
function dumpFiles(file: string): string[] {
  if (!statSync(file).isDirectory()) return [file];
  const steps = readdirSync(file).filter((f) => /^\d+\.jsonl$/.test(f)).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  if (steps.length === 0) throw new FormatError(`The folder ${escapeControl(file)} has no <step>.jsonl generation dump (verl's trainer.rollout_data_dir / validation_data_dir). Nothing was read.`);
  return steps.map((f) => join(file, f));
}

/**
 * A log or dump file as a checked path (its real path, size, device and inode; the worker refuses
 * another file put in its place), refused before it is read when it is not a regular file or its
 * bytes are over the cap.
 */
function logFile(file: string, what: string): CheckedPath {
  try {
    const path = realpathSync(file);
    const st = statSync(path);
    if (!st.isFile()) throw new FormatError(`The ${what} ${escapeControl(file)} is not a regular file. Nothing was read.`);
    checkFileBytes(st.size, LOG_LIMITS, what);
    return { path, size: st.size, dev: st.dev, ino: st.ino };
  } catch (e) {
    if (e instanceof FormatError) throw e;
    throw new SatError('file', `Cannot read the ${what} ${escapeControl(file)}: ${e instanceof Error ? escapeControl(e.message) : String(e)}`);
  }
}

/** A folder's generation dumps, read and parsed by the budgeted worker from their paths, printed (printDump). */
async function printGenerations(where: string, files: readonly string[]): Promise<void> {
  // Each file's path and size to the budgeted worker, which reads and parses it (the names escaped: they reach the terminal in its notes)
  const sources = files.map((f) => ({ name: escapeControl(f.split(/[\\/]/).pop()!), source: logFile(f, 'generation dump') }));
  printDump(await cliCheck()('generations', sources, `The generation dump ${escapeControl(where)}`));
}

/** Prints a generation dump's episodes: per step and agent the rows and mean score, then the first rows. */
function printDump(dump: GenerationDump): void {
  console.log(`${dump.name}: generation dump, ${dump.rows.length} replies in ${dump.steps.length} step${dump.steps.length > 1 ? 's' : ''} (${dump.steps[0]}–${dump.steps[dump.steps.length - 1]})${dump.agents > 0 ? `, ${dump.agents} agents (each prompt's last turn marker)` : ', one policy (no turn marker in the prompts)'}`);
  for (const w of dump.warnings) console.log(`  note: ${w}`);
  console.log('step  agent  rows  mean score');
  for (const s of generationSummary(dump)) console.log(`${String(s.step).padStart(4)}  ${(s.agent === null ? '—' : String(s.agent)).padStart(5)}  ${String(s.rows).padStart(4)}  ${f4(s.meanScore ?? undefined).padStart(10)}`);
  const first = generationPage(dump, { size: 5 });
  console.log(`first ${first.rows.length} of ${first.total}:`);
  const q = (t: string) => JSON.stringify(t.length > 120 ? `…${t.slice(-120)}` : t);
  for (const r of first.rows) console.log(`  step ${r.step}${r.agent === null ? '' : ` agent ${r.agent}`} score ${f4(r.score ?? undefined)}${r.groundTruth === null ? '' : ` (truth ${JSON.stringify(r.groundTruth)})`}\n    prompt ${q(r.input)}\n    reply  ${q(r.output)}`);
}

/**
 * Prints a real run's log as the page's charts would read it (the file read and parsed in the
 * budgeted worker thread, inputCheck.ts, from its path), or a generation dump's episodes.
 */
export async function printRunLog(file: string): Promise<void> {
  let isDir = false;
  try {
    isDir = statSync(file).isDirectory();
  } catch {
    // logFile says why
  }
  const base = (f: string) => f.split(/[\\/]/).pop()!;
  if (isDir) return printGenerations(file, dumpFiles(file));
  const source = logFile(file, 'run log');
  const name = escapeControl(base(file)); // quoted in the log's messages and its title
  // The worker tells a generation dump from a run log by the file's first line, and reads it as either.
  const opened = await cliCheck()('importLog', { source, name }, `The log ${name}`);
  if (opened.kind === 'generations') return printDump(opened.dump);
  const { log } = opened;
  console.log(`${log.name}: ${log.format} (${engineLabel(log)}), ${log.steps.length} steps (${log.steps[0]}–${log.steps[log.steps.length - 1]}), ${log.keys.length} metrics${log.agents > 0 ? `, ${log.agents} agents` : ''}`);
  for (const w of log.warnings) console.log(`  skipped: ${escapeControl(w)}`);
  const j = runJ(log);
  const kl = runKl(log);
  const clip = runClip(log);
  const tl = runTimeline(log);
  const agents = Math.max(log.agents, 1);
  const head = ['step', 'J', 'train', 'lower', ...Array.from({ length: agents }, (_, i) => `kl${i}`), ...Array.from({ length: agents }, (_, i) => `clip${i}`), 'order'];
  const byStep = new Map<number, string[]>();
  const row = (s: number) => byStep.get(s) ?? byStep.set(s, head.map((h, i) => (i === 0 ? String(s) : '—'))).get(s)!;
  if ('rows' in j) for (const r of j.rows) Object.assign(row(r.step), { 1: f4(r.J), 2: f4(r.train), 3: f4(r.lower) });
  if ('rows' in kl) for (const r of kl.rows) r.kl.forEach((x, i) => (row(r.step)[4 + i] = f4(x)));
  if ('rows' in clip) for (const r of clip.rows) r.clip.forEach((x, i) => (row(r.step)[4 + agents + i] = f4(x)));
  if ('rows' in tl) for (const r of tl.rows) row(r.step)[head.length - 1] = r.updates.map((u) => `${u.agent}${u.violated ? '!' : ''}${u.backtracks > 0 ? `(${u.backtracks}bt)` : ''}`).join('→');
  const rows = [...byStep.entries()].sort((a, b) => a[0] - b[0]).map(([, r]) => r);
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  console.log(head.map((h, i) => h.padStart(width[i]!)).join('  '));
  for (const r of rows) console.log(r.map((c, i) => c.padStart(width[i]!)).join('  '));
  if ('note' in j && j.note) console.log(j.note);
  if ('what' in kl && kl.what) console.log(`KL: ${kl.what}`);
  if ('rows' in kl) kl.violationRate.forEach((v, i) => v !== null && console.log(`agent ${i}: δ = ${kl.deltas[i]}, violation rate ${(v * 100).toFixed(1)} %`));
  for (const [name, c] of [['J', j], ['KL', kl], ['clip fraction', clip], ['timeline', tl]] as const) if ('reason' in c) console.log(`${name}: ${c.reason}`);
}
