/**
 * The thinned series an imported run's charts draw (src/bridge/runLogSeries.ts): bucketExtremes,
 * the one-pass fast path, against a plainly written twin on fresh random series — gaps of NaN
 * (single and long runs), ties, non-finite values, every bucket count from one to more than the
 * series has; thinChart keeps every row up to its cap and, past it, at most the cap with each
 * series' first, last, lowest and highest value, a one-step spike included; and a long log's KL
 * chart drawn from a RunLog's columns.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { packRunLog, type RunStep } from '../src/bridge/runLog';
import { bucketExtremes, CHART_POINTS, runKl, thinChart, thinText } from '../src/bridge/runLogSeries';

/** The twin: each finite value put in its run by searching the runs' bounds, then per run the first, the last, and the lowest and highest by sorting (equal values: the earlier index). */
function reference(values: readonly number[], buckets: number): number[] {
  const n = values.length;
  const runs = Math.max(1, Math.min(Math.floor(buckets), n));
  const bounds = Array.from({ length: runs + 1 }, (_, b) => Math.floor((b * n) / runs));
  const groups: [number, number][][] = Array.from({ length: runs }, () => []);
  values.forEach((v, i) => {
    if (!Number.isFinite(v)) return;
    let b = 0;
    while (bounds[b + 1]! <= i) b++;
    groups[b]!.push([i, v]);
  });
  const keep = new Set<number>();
  for (const g of groups) {
    if (g.length === 0) continue;
    keep.add(g[0]![0]);
    keep.add(g[g.length - 1]![0]);
    keep.add([...g].sort((a, b) => a[1] - b[1] || a[0] - b[0])[0]![0]);
    keep.add([...g].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]![0]);
  }
  return [...keep].sort((a, b) => a - b);
}

const seed = Date.now() % 2 ** 31;

/** A random series: smooth, coarse (many ties) or noisy, with NaN single gaps and long gaps, now and then ±Infinity. */
function series(rng: Rng, n: number): number[] {
  const kind = rng.int(3);
  const gap = rng.uniform() * 0.5;
  const out: number[] = [];
  let inGap = 0;
  for (let i = 0; i < n; i++) {
    if (inGap > 0) {
      inGap--;
      out.push(NaN);
      continue;
    }
    if (rng.uniform() < 0.01) inGap = rng.int(200);
    const r = rng.uniform();
    if (r < gap) out.push(NaN);
    else if (r < gap + 0.002) out.push(rng.uniform() < 0.5 ? Infinity : -Infinity);
    else out.push(kind === 0 ? Math.sin(i / 50) + rng.uniform() * 0.1 : kind === 1 ? rng.int(4) : (rng.uniform() - 0.5) * 10 ** rng.int(6));
  }
  return out;
}

describe('bucketExtremes (fast) against its twin', () => {
  it(`equals the twin on 600 fresh random series (seed ${seed})`, () => {
    const rng = new Rng(seed);
    for (let t = 0; t < 600; t++) {
      const n = t < 20 ? t : rng.int(4000);
      const buckets = 1 + rng.int(Math.max(1, Math.ceil(n * 1.2)));
      const v = series(rng, n);
      expect(bucketExtremes(v, buckets), `seed ${seed}, case ${t}: n ${n}, ${buckets} buckets`).toEqual(reference(v, buckets));
      expect(bucketExtremes(Float64Array.from(v), buckets), `seed ${seed}, case ${t} as a Float64Array`).toEqual(reference(v, buckets));
    }
  });

  it('keeps at most four indices a run, never a gap', () => {
    const rng = new Rng(seed + 1);
    const v = series(rng, 5000);
    const kept = bucketExtremes(v, 100);
    expect(kept.length).toBeLessThanOrEqual(400);
    expect(kept.every((i) => Number.isFinite(v[i]!))).toBe(true);
  });
});

describe('thinChart', () => {
  type Row = { step: number; v: number[] };
  const rowsOf = (cols: number[][]): Row[] => cols[0]!.map((_, i) => ({ step: i * 2, v: cols.map((c) => c[i]!) }));
  const thin = (rows: Row[], cap?: number) => thinChart(rows, (r) => r.v, (r, kept) => ({ step: r.step, v: [...kept] }), cap);

  it('draws every row up to the cap, with no note', () => {
    const rows = rowsOf([Array.from({ length: CHART_POINTS }, (_, i) => i)]);
    const t = thin(rows);
    expect(t.rows).toBe(rows);
    expect(t.note).toBeNull();
  });

  it(`past the cap: at most the cap, each series' first, last, lowest and highest kept, a one-step spike included (seed ${seed})`, () => {
    const rng = new Rng(seed + 2);
    for (let t = 0; t < 20; t++) {
      const n = CHART_POINTS + 1 + rng.int(30_000);
      const cols = [series(rng, n), series(rng, n), series(rng, n)];
      const spike = rng.int(n);
      cols[1]![spike] = 1e9; // a spike in one step
      const rows = rowsOf(cols);
      const { rows: drawn, note } = thin(rows);
      expect(drawn.length, `seed ${seed}, case ${t}`).toBeLessThanOrEqual(CHART_POINTS);
      expect(note!.drawn).toBe(drawn.length);
      expect(note!.of).toBe(n);
      expect(drawn.map((r) => r.step)).toEqual([...new Set(drawn.map((r) => r.step))].sort((a, b) => a - b));
      cols.forEach((c, s) => {
        const finite = c.map((v, i) => [i, v] as const).filter(([, v]) => Number.isFinite(v));
        const drawnS = drawn.filter((r) => !Number.isNaN(r.v[s]!)).map((r) => [r.step / 2, r.v[s]!] as const);
        if (finite.length === 0) return expect(drawnS).toEqual([]);
        // each drawn value is the series' own value at that step
        for (const [i, v] of drawnS) expect(v).toBe(c[i]);
        expect(drawnS[0]).toEqual(finite[0]);
        expect(drawnS[drawnS.length - 1]).toEqual(finite[finite.length - 1]);
        expect(Math.min(...drawnS.map(([, v]) => v))).toBe(Math.min(...finite.map(([, v]) => v)));
        expect(Math.max(...drawnS.map(([, v]) => v))).toBe(Math.max(...finite.map(([, v]) => v)));
      });
      expect(drawn.find((r) => r.step === spike * 2)?.v[1]).toBe(1e9);
    }
  });

  it('says what it drew', () => {
    const rows = rowsOf([Array.from({ length: 10_001 }, (_, i) => Math.sin(i))]);
    const { note } = thin(rows, 1_200);
    // one live series: 300 runs of 33 or 34 rows
    expect([note!.shortest, note!.longest]).toEqual([33, 34]);
    expect(thinText(note!)).toBe(`Drawn: ${note!.drawn.toLocaleString('en')} of 10,001 steps — each line keeps its first, last, lowest and highest value in every run of 33–34 steps.`);
  });
});

describe("a long log's KL chart", () => {
  it('is thinned from the columns with each agent keeping its own extremes', () => {
    const n = 16_000;
    const steps: RunStep[] = Array.from({ length: n }, (_, i) => ({ step: i + 1, metrics: { 'agent0/actor/ppo_kl': Math.cos(i / 300), 'agent1/actor/ppo_kl': i === 7_777 ? 5 : Math.sin(i / 300) } }));
    const log = packRunLog({ format: 'verl-jsonl', engine: 'teamtr', name: 'long', agents: 2, warnings: [] }, steps);
    const kl = runKl(log);
    if (!('rows' in kl)) throw new Error(kl.reason);
    const { rows, note } = thinChart(kl.rows, (r) => r.kl, (r, v) => ({ step: r.step, kl: v }));
    expect(rows.length).toBeLessThanOrEqual(CHART_POINTS);
    expect(note!.of).toBe(n);
    expect(rows.find((r) => r.step === 7_778)?.kl[1]).toBe(5);
    expect(rows[rows.length - 1]!.step).toBe(n);
  });
});
