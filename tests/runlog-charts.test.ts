/**
 * What the page draws of an imported run, worked out in the check's worker (src/bridge/runLogCharts.ts):
 * on fresh random logs — one policy or a team, gaps, short and longer than a chart draws — each
 * chart's columns read back as rows equal the rows the view drew from the run itself (runJ / runKl /
 * runClip thinned by thinChart, the view's way), the readouts' last values and the timeline's last
 * rows the same; the SAT authors' trainer fixture (updates, δ) too; and the page's jobs (importLog
 * with `charts`, runLink) hand the charts' columns over as transferred buffers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { packRunLog, readRunLog, type RunLog, type RunStep } from '../src/bridge/runLog';
import { runLogCharts, TIMELINE_ROWS, type DrawnColumns } from '../src/bridge/runLogCharts';
import { runLogParam } from '../src/bridge/runLogFile';
import { runClip, runJ, runKl, runTimeline, thinChart } from '../src/bridge/runLogSeries';
import { replyTransfer, runJob } from '../src/workers/inputJobs';

const seed = Date.now() % 2 ** 31;
const LOGS = join(import.meta.dirname, 'fixtures/bridge/logs');

/** Drawn columns back as rows of [step, …each series' value or NaN]. */
function columnsAsRows(d: DrawnColumns): number[][] {
  const n = d.steps.length;
  return Array.from(d.steps, (step, k) => [step, ...Array.from({ length: d.width }, (_, s) => d.values[s * n + k]!)]);
}

/** The rows the view drew from a whole chart before (each row's values, NaN where none; thinned as thinChart keeps them). */
function drawnBefore<R extends { step: number }>(rows: readonly R[], pick: (r: R) => readonly number[]): { rows: number[][]; thin: unknown } {
  const t = thinChart(rows, (r) => pick(r).map((x) => (x !== undefined && Number.isFinite(x) ? x : NaN)), (r, kept) => ({ ...r, kept }) as R & { kept?: readonly number[] });
  return { rows: (t.rows as (R & { kept?: readonly number[] })[]).map((r) => [r.step, ...(r.kept ?? pick(r)).map((x) => (x !== undefined && Number.isFinite(x) ? x : NaN))]), thin: t.note };
}

/** A random verl-style log: `agents` 0 (one policy) or more, n steps with gaps, J every few steps. */
function randomLog(rng: Rng, n: number, agents: number): RunLog {
  const steps: RunStep[] = [];
  const jEvery = 1 + rng.int(12);
  for (let i = 0; i < n; i++) {
    const m: Record<string, number> = {};
    if (rng.uniform() < 0.9) m['critic/score/mean'] = rng.uniform();
    if (i % jEvery === 0 && rng.uniform() < 0.8) m['val-core/arith/acc/mean@1'] = rng.uniform();
    for (let a = 0; a < Math.max(agents, 1); a++) {
      const pre = agents > 0 ? `agent${a}/` : '';
      if (rng.uniform() < 0.7) m[`${pre}actor/ppo_kl`] = rng.uniform() < 0.001 ? 9 : rng.uniform() * 0.01;
      if (rng.uniform() < 0.5) m[`${pre}actor/pg_clipfrac`] = rng.uniform() * 0.1;
    }
    if (Object.keys(m).length > 0 || rng.uniform() < 0.5) steps.push({ step: i + 1, metrics: m });
  }
  return packRunLog({ format: 'verl-jsonl', engine: agents > 0 ? 'teamtr' : 'verl', name: 'random.jsonl', agents, warnings: [] }, steps);
}

/** The charts against the view's old path, chart by chart. */
function expectSame(log: RunLog, what: string): void {
  const c = runLogCharts(log);
  const j = runJ(log);
  if ('reason' in j) expect(c.j, what).toEqual({ reason: j.reason });
  else {
    if ('reason' in c.j) throw new Error(`${what}: J chart missing`);
    const before = drawnBefore(j.rows, (r) => [r.J ?? NaN, r.train ?? NaN, r.lower ?? NaN]);
    expect(columnsAsRows(c.j), `${what}: J rows`).toEqual(before.rows);
    expect(c.j.thin, `${what}: J thinning`).toEqual(before.thin);
    expect(c.j.last, `${what}: last J`).toEqual([...j.rows].reverse().find((r) => r.J !== undefined || r.train !== undefined || r.lower !== undefined) ?? null);
    expect(c.j.note, what).toBe(j.note);
  }
  const kl = runKl(log);
  if ('reason' in kl) expect(c.kl, what).toEqual({ reason: kl.reason });
  else {
    if ('reason' in c.kl) throw new Error(`${what}: KL chart missing`);
    const before = drawnBefore(kl.rows, (r) => r.kl);
    expect(columnsAsRows(c.kl), `${what}: KL rows`).toEqual(before.rows);
    expect(c.kl.thin, what).toEqual(before.thin);
    expect(c.kl.last, what).toEqual(kl.rows[kl.rows.length - 1]?.kl ?? null);
    expect([c.kl.deltas, c.kl.violationRate, c.kl.what], what).toEqual([kl.deltas, kl.violationRate, kl.what]);
  }
  const clip = runClip(log);
  if ('reason' in clip) expect(c.clip, what).toEqual({ reason: clip.reason });
  else {
    if ('reason' in c.clip) throw new Error(`${what}: clip chart missing`);
    const before = drawnBefore(clip.rows, (r) => r.clip);
    expect(columnsAsRows(c.clip), `${what}: clip rows`).toEqual(before.rows);
    expect(c.clip.thin, what).toEqual(before.thin);
    expect(c.clip.last, what).toEqual(clip.rows[clip.rows.length - 1]?.clip ?? null);
  }
  const tl = runTimeline(log);
  if ('reason' in tl) expect(c.timeline, what).toEqual({ reason: tl.reason });
  else expect(c.timeline, what).toEqual({ rows: tl.rows.slice(-TIMELINE_ROWS), count: tl.rows.length, ...(tl.note !== undefined ? { note: tl.note } : {}) });
}

describe('an imported run\'s charts as columns (runLogCharts)', () => {
  it(`equal the rows the view drew from the run, on 120 fresh random logs (seed ${seed})`, () => {
    const rng = new Rng(seed);
    let thinned = 0;
    for (let t = 0; t < 120; t++) {
      const n = t < 5 ? t : rng.uniform() < 0.3 ? 1_200 + rng.int(4_000) : rng.int(1_300);
      const agents = rng.uniform() < 0.5 ? 0 : 1 + rng.int(3);
      const log = randomLog(rng, n, agents);
      if (log.steps.length === 0) continue;
      expectSame(log, `seed ${seed}, case ${t}: ${n} steps, ${agents} agents`);
      const c = runLogCharts(log);
      if (!('reason' in c.kl) && c.kl.thin !== null) thinned++;
    }
    expect(thinned, 'some logs long enough to be thinned').toBeGreaterThan(0);
  });

  it('the SAT authors\' trainer log: KL against δ, violations and the timeline', () => {
    const log = readRunLog(readFileSync(join(LOGS, 'sat-trainer.log'), 'utf8'), 'sat-trainer.log');
    expectSame(log, 'sat-trainer.log');
    const c = runLogCharts(log);
    if ('reason' in c.kl || 'reason' in c.timeline) throw new Error('the fixture has updates');
    expect(c.kl.deltas.some((d) => d !== null)).toBe(true);
    expect(c.timeline.count).toBeGreaterThan(0);
  });

  it('the page\'s jobs hand the charts\' columns over as transferred buffers', async () => {
    const text = readFileSync(join(LOGS, 'verl-file.jsonl'), 'utf8');
    const reply = await runJob('importLog', { source: new Blob([text]), name: 'verl-file.jsonl', charts: true });
    if (!reply.ok || reply.value.kind !== 'runLog' || !reply.value.charts) throw new Error('expected a run log with charts');
    const { charts } = reply.value;
    if ('reason' in charts.j || 'reason' in charts.kl) throw new Error('the fixture has J and KL');
    const buffers = replyTransfer(reply);
    for (const a of [charts.j.steps, charts.j.values, charts.kl.steps, charts.kl.values]) expect(buffers).toContain(a.buffer);
    // without `charts` (the CLI) none are worked out
    const plain = await runJob('importLog', { source: new Blob([text]), name: 'verl-file.jsonl' });
    expect(plain.ok && plain.value.kind === 'runLog' && plain.value.charts).toBe(undefined);

    const log = readRunLog(text, 'verl-file.jsonl');
    const link = await runJob('runLink', runLogParam(log)!);
    if (!link.ok) throw new Error(link.message);
    expect(Array.from(link.value.log.steps)).toEqual(Array.from(log.steps));
    expect(link.value.charts).toEqual(runLogCharts(link.value.log));
    if ('reason' in link.value.charts.j) throw new Error('the fixture has J');
    expect(replyTransfer(link)).toContain(link.value.charts.j.values.buffer);
  });
});
