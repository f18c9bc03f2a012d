/**
 * The command line's side of the bridge to real engines: `--export-recipe FILE` writes every file
 * of the recipe (src/bridge/recipe.ts) next to FILE, and `--import-log FILE` reads a real run's
 * log (src/bridge/runLog.ts) and prints what the page's charts would show, as tables.
 *
 * Not here: the mappings and parsers themselves (src/bridge).
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FormatError, SatError } from '../core/errors';
import { checkFileBytes, LOG_LIMITS } from '../bridge/limits';
import { escapeControl } from '../core/text';
import { isLlmTask, type Config } from '../sat/config';
import { planLlm, planTabular } from '../sat/experiment';
import { DEFAULT_MODELS, recipe, recipeSummary, type ModelMap } from '../bridge/recipe';
import { runClip, runJ, runKl, runTimeline } from '../bridge/runLogSeries';
import { cliCheck } from './inputCheck';

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
  if (r.verl.length > 0) writeFileSync(`${file}.verl.txt`, `${r.verl.join('\n')}\n`);
  const written = r.files.map((f) => f.path).filter((p) => !p.includes('/'));
  const data = r.files.filter((f) => f.path.includes('/'));
  if (r.files.length === 0) console.log(`nothing written in ${dir}: every engine refused these settings (the reasons below; docs/real-run.md)`);
  else console.log(`wrote in ${dir}: ${[...written, ...(r.verl.length > 0 ? [`${file.split(/[\\/]/).pop()}.verl.txt`] : [])].join(', ')}${data.length > 0 ? `, and ${data.length} data files under ${data[0]!.path.split('/')[0]}/ (datasets and reward.py)` : ''}`);
  for (const line of recipeSummary(r)) console.log(`  ${line}`);
  console.log(`${r.unmapped.length} settings have no counterpart in any engine (docs/real-run.md says why): ${r.unmapped.join(', ')}`);
}

const f4 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '—' : Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(2) : x.toFixed(4));

/** Prints a real run's log as the page's charts would read it; the file is read and parsed in the budgeted worker thread (inputCheck.ts). */
export async function printRunLog(file: string): Promise<void> {
  let size: number;
  try {
    // A regular file (not a pipe or a device), refused before it is read when its bytes are over the cap.
    const st = statSync(file);
    if (!st.isFile()) throw new FormatError(`The run log ${escapeControl(file)} is not a regular file. Nothing was read.`);
    checkFileBytes(st.size, LOG_LIMITS, 'run log');
    size = st.size;
  } catch (e) {
    if (e instanceof FormatError) throw e;
    throw new SatError('file', `Cannot read the run log ${escapeControl(file)}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const name = escapeControl(file.split(/[\\/]/).pop()!); // quoted in the log's messages and its title
  const log = await cliCheck()('runLog', { source: { path: file, size }, name }, `The run log ${name}`);
  console.log(`${log.name}: ${log.format} (${log.engine}), ${log.steps.length} steps (${log.steps[0]!.step}–${log.steps[log.steps.length - 1]!.step}), ${log.keys.length} metrics${log.agents > 0 ? `, ${log.agents} agents` : ''}`);
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
