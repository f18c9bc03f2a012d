/**
 * The claims report (src/studies/claims.ts, src/cli/claims.ts, src/cli/claimsReport.ts):
 *
 *   - the verdict rule on constructed intervals (a CI above the threshold holds, below does not,
 *     across it is not established; claim 5's "contains ½, excludes 0"), and how tests combine;
 *   - the SVG writer on a constructed plot: well-formed XML, one group per series with its points,
 *     one error bar per point, and a specific error for a point it cannot draw;
 *   - `npm run claims -- --quick` into a temp folder (seconds): five claims, one SVG each that parses
 *     as XML and holds the plotted series, verdicts from the allowed set and consistent with their
 *     tests, finite well-formed CIs, the commands in the markdown — its format, not its numbers;
 *   - `--render` rewrites the same files from the data; the committed report is what the committed
 *     data generate (docs stay true), at the full scale;
 *   - a seed fixes a claim's numbers; a cancelled claim returns null; bad input gets a specific error.
 *
 * Seeds: the claims' own (1 … n); no other randomness.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SatError } from '../src/core/errors';
import {
  CLAIM_IDS, type ClaimPlot, type ClaimsReport, combineVerdicts, estimate, paired, runClaim, VERDICTS, verdictOf, wilson,
} from '../src/studies/claims';
import { claimSvg, claimsMarkdown, svgName } from '../src/cli/claimsReport';
import { niceTicks } from '../src/app/claimsPlot';

/**
 * A strict-enough XML well-formedness check for the SVGs (Node has no XML parser): one root,
 * every tag closed in order, attributes quoted, no raw `<` or bare `&` in text or attributes.
 * Returns the elements as [name, attributes] in document order.
 */
function parseXml(src: string): { name: string; attrs: Record<string, string> }[] {
  const out: { name: string; attrs: Record<string, string> }[] = [];
  const stack: string[] = [];
  const body = src.replace(/^<\?xml[^>]*\?>\s*/, '');
  const re = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let roots = 0;
  let pos = 0;
  for (let m = re.exec(body); m; m = re.exec(body)) {
    pos = re.lastIndex;
    const [, close, name, attrText, self, text] = m;
    const checkEntities = (s: string, where: string) => {
      const bad = s.match(/&(?!(amp|lt|gt|quot|apos|#\d+);)/);
      if (bad) throw new Error(`bare & in ${where}: ${s.slice(0, 60)}`);
    };
    if (text !== undefined) {
      if (stack.length === 0 && text.trim()) throw new Error(`text outside the root: ${text.slice(0, 40)}`);
      checkEntities(text, 'text');
      continue;
    }
    if (close) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
      continue;
    }
    if (stack.length === 0 && ++roots > 1) throw new Error('more than one root element');
    const attrs: Record<string, string> = {};
    for (const a of attrText!.matchAll(/([\w:-]+)="([^"]*)"/g)) {
      if (a[1]! in attrs) throw new Error(`attribute ${a[1]} repeated on <${name}>`);
      checkEntities(a[2]!, `attribute ${a[1]}`);
      attrs[a[1]!] = a[2]!;
    }
    out.push({ name: name!, attrs });
    if (!self) stack.push(name!);
  }
  if (pos !== body.length) throw new Error(`not XML at offset ${pos}: ${body.slice(pos, pos + 40)}`);
  if (stack.length) throw new Error(`unclosed <${stack.join('>, <')}>`);
  if (roots !== 1) throw new Error('no root element');
  return out;
}

const PLOT: ClaimPlot = {
  title: 'J & friends <by stage>', xLabel: 'stage', yLabel: 'J', xLog: false,
  series: [
    { name: 'A "team"', points: [{ x: 0, y: 1, lo: 0.5, hi: 1.5 }, { x: 1, y: 2, lo: 1.2, hi: 2.9 }, { x: 2, y: 2.5, lo: 2, hi: 3 }], errorBars: true },
    { name: 'fit', points: [{ x: 0, y: 1.1, lo: 1.1, hi: 1.1 }, { x: 2, y: 2.4, lo: 2.4, hi: 2.4 }], errorBars: false },
  ],
  refs: [{ y: 0, label: 'zero' }],
};

describe('the verdict rule', () => {
  it('a CI above the threshold holds, below it does not hold, across it (or touching it) is not established', () => {
    expect(verdictOf({ lo: 0.1, hi: 0.3 }, 'above', 0)).toBe('holds');
    expect(verdictOf({ lo: -0.3, hi: -0.1 }, 'above', 0)).toBe('does not hold');
    expect(verdictOf({ lo: -0.1, hi: 0.2 }, 'above', 0)).toBe('not established');
    expect(verdictOf({ lo: 0, hi: 0.2 }, 'above', 0)).toBe('not established');
    expect(verdictOf({ lo: 0.96, hi: 1 }, 'above', 0.95)).toBe('holds');
    expect(verdictOf({ lo: 0.9, hi: 0.94 }, 'above', 0.95)).toBe('does not hold');
  });

  it('an interval that decides nothing (infinite ends, one seed; reversed ends) is not established', () => {
    expect(verdictOf({ lo: -Infinity, hi: Infinity }, 'above', 0)).toBe('not established');
    expect(verdictOf({ lo: 0.2, hi: 0.1 }, 'above', 0)).toBe('not established');
    expect(verdictOf({ lo: Number.NaN, hi: 1 }, 'contains', 0.5, 0)).toBe('not established');
    // meanCI of one value has infinite ends: the rule cannot be fooled by a single seed.
    expect(verdictOf(estimate([0.7]), 'above', 0)).toBe('not established');
  });

  it('claim 5\u2019s rule: ½ inside and 0 outside holds; ½ outside does not hold; ½ and 0 both inside is not established', () => {
    expect(verdictOf({ lo: 0.3, hi: 0.7 }, 'contains', 0.5, 0)).toBe('holds');
    expect(verdictOf({ lo: -0.053, hi: -0.019 }, 'contains', 0.5, 0)).toBe('does not hold');
    expect(verdictOf({ lo: 0.6, hi: 0.9 }, 'contains', 0.5, 0)).toBe('does not hold');
    expect(verdictOf({ lo: -0.1, hi: 0.9 }, 'contains', 0.5, 0)).toBe('not established');
  });

  it('a claim holds when every test holds, does not hold when any does not, and is otherwise not established', () => {
    expect(combineVerdicts(['holds', 'holds'])).toBe('holds');
    expect(combineVerdicts(['holds', 'not established'])).toBe('not established');
    expect(combineVerdicts(['not established', 'does not hold', 'holds'])).toBe('does not hold');
    expect(combineVerdicts([])).toBe('not established');
  });

  it('estimate is the Student-t interval over seeds; paired differences need equal lengths', () => {
    // Mean 3, s = √2.5, t(0.975, 4) = 2.776445: half-width 2.776445·√2.5/√5 = 1.963243.
    const e = estimate([1, 2, 3, 4, 5]);
    expect(e.mean).toBe(3);
    expect(e.hi - e.mean).toBeCloseTo(1.963243, 5);
    expect(e.mean - e.lo).toBeCloseTo(1.963243, 5);
    expect(paired([3, 5], [1, 1])).toEqual([2, 4]);
    expect(() => paired([1, 2], [1])).toThrow(/2 values against 1/);
  });

  it('wilson is the score interval of a share, inside [0, 1] and with a width at 0 and at n of n', () => {
    // Tabulated values (Newcombe 1998, method 3): 9/10 → [0.5958, 0.9821]; 0/10 → [0, 0.2775].
    const a = wilson(9, 10, 2);
    expect(a.mean).toBe(0.9);
    expect(a.lo).toBeCloseTo(0.5958, 4);
    expect(a.hi).toBeCloseTo(0.9821, 4);
    expect(a).toMatchObject({ n: 2, trials: 10, method: 'wilson' });
    const z = wilson(0, 10, 2);
    expect(z.lo).toBe(0);
    expect(z.hi).toBeCloseTo(0.2775, 4);
    // All held: t over seeds would give [1, 1]; Wilson keeps a lower end below 1 (1 − 0.2775 by symmetry).
    const all = wilson(10, 10, 2);
    expect(all.hi).toBe(1);
    expect(all.lo).toBeCloseTo(1 - 0.2775, 4);
    for (const [k, n] of [[1.5, 10], [11, 10], [0, 0], [-1, 4]] as const) expect(() => wilson(k, n, 1)).toThrow(/wilson/);
  });
});

describe('the SVG writer', () => {
  it('writes well-formed XML with a group per series, its points, one error bar per point, and escaped text', () => {
    const svg = claimSvg(PLOT);
    const els = parseXml(svg);
    expect(els[0]!.name).toBe('svg');
    const groups = els.filter((e) => e.attrs.class === 'series');
    expect(groups.map((g) => g.attrs['data-series'])).toEqual(['A &quot;team&quot;', 'fit']);
    expect(groups.map((g) => g.attrs['data-points'])).toEqual(['3', '2']);
    expect(els.filter((e) => e.attrs.class === 'ci')).toHaveLength(3);
    expect(els.filter((e) => e.name === 'polyline')).toHaveLength(2);
    expect(svg).toContain('J &amp; friends &lt;by stage&gt;');
    expect(svg).toContain('>stage</text>');
  });

  it('draws categories and log axes, and refuses a point it cannot draw with a message naming it', () => {
    const cat = claimSvg({ ...PLOT, xCategories: ['fixed', 'reverse', 'random'], series: [PLOT.series[0]!] });
    expect(parseXml(cat).filter((e) => e.name === 'polyline')).toHaveLength(0);
    for (const c of ['fixed', 'reverse', 'random']) expect(cat).toContain(`>${c}</text>`);
    const log = claimSvg({ ...PLOT, xLog: true, series: [{ ...PLOT.series[0]!, points: [{ x: 0.001, y: 0.2, lo: 0.1, hi: 0.3 }, { x: 0.1, y: 0.2, lo: 0.15, hi: 0.25 }] }] });
    expect(log).toContain('>0.001</text>');
    expect(log).toContain('>0.1</text>');
    expect(() => claimSvg({ ...PLOT, series: [{ ...PLOT.series[0]!, points: [{ x: 1, y: 1, lo: -Infinity, hi: 2 }] }] })).toThrow(/non-finite point/);
    expect(() => claimSvg({ ...PLOT, xLog: true })).toThrow(/x = 0 on a log axis/);
    expect(() => claimSvg({ ...PLOT, series: [] })).toThrow(/no points/);
  });

  it('niceTicks covers its range with round steps', () => {
    for (const [lo, hi] of [[0, 1], [-0.31, 0.07], [3.2, 11.7], [0.95, 1], [5, 5]] as const) {
      const t = niceTicks(lo, hi);
      expect(t[0]!).toBeLessThanOrEqual(lo);
      expect(t.at(-1)!).toBeGreaterThanOrEqual(hi);
      const steps = t.slice(1).map((x, i) => x - t[i]!);
      for (const s of steps) expect(s).toBeCloseTo(steps[0]!, 9);
    }
  });
});

describe('npm run claims -- --quick', () => {
  let dir = '';
  let report: ClaimsReport;
  let md = '';
  let cli: ReturnType<typeof spawnSync>;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sat-claims-test-'));
    cli = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/claims.ts', '--quick', '--out', dir], { encoding: 'utf8', timeout: 120_000 });
    report = JSON.parse(readFileSync(join(dir, 'data.json'), 'utf8')) as ClaimsReport;
    md = readFileSync(join(dir, 'claims.md'), 'utf8');
  }, 150_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes five claims with verdicts from the allowed set that follow from their tests', () => {
    expect(cli.status, String(cli.stderr)).toBe(0);
    expect(report.format).toBe('sat-claims/1');
    expect(report.scale).toBe('quick');
    expect(report.claims.map((c) => c.id)).toEqual([...CLAIM_IDS]);
    for (const c of report.claims) {
      expect(VERDICTS).toContain(c.verdict);
      expect(c.tests.length).toBeGreaterThan(0);
      for (const t of c.tests) expect(t.verdict).toBe(verdictOf(t.estimate, t.direction, t.threshold, t.exclude));
      // Claim 1 may also fail its premise (the parameter ratio); the others are exactly the combination.
      if (c.id !== 1) expect(c.verdict).toBe(combineVerdicts(c.tests.map((t) => t.verdict)));
      for (const v of Object.values(c.perSeed)) expect(v).toHaveLength(c.seeds.length);
      expect(c.rule.length).toBeGreaterThan(40);
      expect(c.summary).not.toMatch(/NaN|undefined/);
    }
  });

  it('every interval is finite and well-formed (lo ≤ mean ≤ hi, at least 2 seeds), in the tests and the plots', () => {
    for (const c of report.claims) {
      for (const t of c.tests) {
        const e = t.estimate;
        expect([e.lo, e.mean, e.hi].every(Number.isFinite), `claim ${c.id}: ${t.label}`).toBe(true);
        expect(e.lo).toBeLessThanOrEqual(e.mean);
        expect(e.mean).toBeLessThanOrEqual(e.hi);
        expect(e.n).toBeGreaterThanOrEqual(2);
      }
      for (const s of c.plot.series) {
        expect(s.points.length).toBeGreaterThan(0);
        for (const p of s.points) {
          expect([p.x, p.y, p.lo, p.hi].every(Number.isFinite)).toBe(true);
          expect(p.lo).toBeLessThanOrEqual(p.y + 1e-12);
          expect(p.y).toBeLessThanOrEqual(p.hi + 1e-12);
        }
      }
    }
  });

  it('writes one SVG per claim that parses as XML and carries each plotted series with its points', () => {
    for (const c of report.claims) {
      const file = join(dir, 'claims', svgName(c));
      expect(existsSync(file), file).toBe(true);
      const els = parseXml(readFileSync(file, 'utf8'));
      expect(els[0]!.name).toBe('svg');
      const groups = els.filter((e) => e.attrs.class === 'series');
      expect(groups).toHaveLength(c.plot.series.length);
      groups.forEach((g, i) => expect(Number(g.attrs['data-points'])).toBe(c.plot.series[i]!.points.length));
      const bars = c.plot.series.filter((s) => s.errorBars).reduce((a, s) => a + s.points.length, 0);
      expect(els.filter((e) => e.attrs.class === 'ci')).toHaveLength(bars);
    }
  });

  it('the markdown has a section per claim with its verdict, its plot and its exact commands', () => {
    for (const c of report.claims) {
      const sec = md.split(/^## /m).find((s) => s.includes(`<a id="claim-${c.id}"></a>`));
      expect(sec, `section of claim ${c.id}`).toBeDefined();
      expect(sec).toContain(`**Verdict: ${c.verdict}**`);
      expect(sec).toContain(`](claims/${svgName(c)})`);
      const sh = sec!.match(/```sh\n([\s\S]*?)```/)![1]!.trim().split('\n');
      expect(sh).toEqual([...c.commands]);
      expect(sh[0]).toBe(`npm run claims -- --only ${c.id} --quick`);
      expect(sh.slice(1).every((cmd) => cmd.includes('npm run sat -- --preset '))).toBe(true);
    }
    expect(md).toContain('at this scale');
  });

  it('--render writes the same markdown and SVGs again from the data, running nothing', () => {
    const svg = join(dir, 'claims', svgName({ id: 3 }));
    const before = [readFileSync(join(dir, 'claims.md'), 'utf8'), readFileSync(svg, 'utf8')];
    rmSync(join(dir, 'claims.md'));
    rmSync(svg);
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/claims.ts', '--render', '--quick', '--out', dir], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/running nothing/);
    expect([readFileSync(join(dir, 'claims.md'), 'utf8'), readFileSync(svg, 'utf8')]).toEqual(before);
  });
});

describe('the committed report', () => {
  const committed = JSON.parse(readFileSync('src/app/claims/data.json', 'utf8')) as ClaimsReport;

  it('is the full scale, five claims with at least 5 seeds each', () => {
    expect(committed.scale).toBe('full');
    expect(committed.claims.map((c) => c.id)).toEqual([...CLAIM_IDS]);
    for (const c of committed.claims) expect(c.seeds.length, `claim ${c.id}`).toBeGreaterThanOrEqual(5);
  });

  it('claim 3\u2019s shares near 1 use Wilson intervals over the pooled stages, which stay inside [0, 1]', () => {
    const c3 = committed.claims.find((c) => c.id === 3)!;
    for (const t of c3.tests) {
      expect(t.estimate.method).toBe('wilson');
      expect(t.estimate.trials).toBeGreaterThan(t.estimate.n);
      expect(t.estimate.hi).toBeLessThanOrEqual(1);
      expect(t.estimate.lo).toBeGreaterThanOrEqual(0);
    }
  });

  it('docs/claims.md and docs/claims/*.svg are exactly what the committed data generate (rerun npm run claims after changing the claims)', () => {
    expect(readFileSync('docs/claims.md', 'utf8')).toBe(claimsMarkdown(committed, { svgDir: 'claims', dataPath: '../src/app/claims/data.json', seconds: committed.seconds }));
    for (const c of committed.claims) expect(readFileSync(join('docs/claims', svgName(c)), 'utf8')).toBe(claimSvg(c.plot));
  });
});

describe('running a claim', () => {
  it('a seed fixes the numbers: claim 2 at the quick scale twice gives the same result', async () => {
    const a = await runClaim(2, 'quick');
    const b = await runClaim(2, 'quick');
    expect(a).not.toBeNull();
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });

  it('a cancelled claim returns null; progress counts up to its total', async () => {
    const seen: [number, number][] = [];
    expect(await runClaim(3, 'quick', { cancelled: () => seen.length >= 2, onProgress: (d, t) => void seen.push([d, t]) })).toBeNull();
    expect(seen).toEqual([[1, 24], [2, 24]]); // 4 orders × 2 seeds × 3 stages
  });

  it('bad input gets a specific error', async () => {
    await expect(runClaim(6, 'quick')).rejects.toThrow(/No claim 6: the claims are numbered 1, 2, 3, 4, 5/);
    await expect(runClaim(2, 'huge' as 'quick')).rejects.toThrow(/Unknown claim scale "huge"/);
    await expect(runClaim(1, 'quick')).rejects.toThrow(SatError);
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/claims.ts', '--only', '2,7'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--only takes claim numbers among 1, 2, 3, 4, 5, got 2,7/);
  });
});
