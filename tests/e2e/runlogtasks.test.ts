/**
 * A long run log on the page's main thread, in Chromium: the run crosses from the check's worker
 * with its charts already drawn as columns (each chart's steps and values in Float64Arrays, at most
 * CHART_POINTS rows, src/bridge/runLogCharts.ts), so the page builds no object per step; the view
 * draws them (thinned, labelled, the readouts from every step). The log is picked as a file on disk
 * (a buffer handed to setInputFiles is decoded on the page's main thread by Playwright itself, a
 * task of its own). The longest main-thread task from
 * the pick to 1.5 s after the last chart is drawn (Long Tasks API) is printed with the machine's
 * load; it is held to the 100 ms goal only on a machine at load ≤ 2 (a loaded one stretches every
 * task, and the line says so).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { playgroundForFile, points, settled } from './harness';

const pg = playgroundForFile();

/** The load average over the last minute. */
const load = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

describe('a long run log crosses as chart columns (browser)', () => {
  it('20,000 steps: the charts arrive as Float64Array columns of at most 1,200 rows, drawn thinned; the longest main-thread task is measured', async () => {
    const p = await pg().freshPage();
    // Every reply a Web Worker sends the page, looked at as it arrives: what an opened run's charts are made of.
    await p.addInitScript(() => {
      const w = window as unknown as { __charts: unknown[]; __longest: number; __from: number; __tasks: string[]; __banner: number };
      w.__charts = [];
      w.__tasks = [];
      w.__longest = 0;
      w.__from = Infinity;
      new PerformanceObserver((l) => {
        for (const e of l.getEntries()) {
          if (e.startTime < w.__from) continue;
          w.__longest = Math.max(w.__longest, e.duration);
          w.__tasks.push(`${Math.round(e.duration)} ms at +${Math.round(e.startTime - w.__from)} ms`);
        }
      }).observe({ type: 'longtask', buffered: true });
      const Base = window.Worker;
      window.Worker = class extends Base {
        constructor(url: string | URL, o?: WorkerOptions) {
          super(url, o);
          this.addEventListener('message', (e: MessageEvent) => {
            const charts = (e.data as { value?: { charts?: Record<string, { steps?: unknown; values?: unknown; rows?: unknown }> } } | null)?.value?.charts;
            if (charts) w.__charts.push(Object.fromEntries(Object.entries(charts).map(([k, c]) => [k, { steps: c.steps instanceof Float64Array ? c.steps.length : String(c.steps), values: c.values instanceof Float64Array ? c.values.length : String(c.values) }])));
          });
        }
      };
    });
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);
    const n = 20_000;
    const lines = Array.from({ length: n }, (_, i) => JSON.stringify({ step: i + 1, data: { 'critic/score/mean': (i % 89) / 100, 'actor/ppo_kl': 0.001 * (1 + Math.sin(i / 40)), 'actor/pg_clipfrac': 0.02 + (i % 7) / 1000, ...(i % 10 === 0 ? { 'val-core/arith/acc/mean@1': i / n } : {}) } }));
    await p.evaluate(() => {
      (window as unknown as { __from: number }).__from = performance.now();
    });
    const dir = mkdtempSync(join(tmpdir(), 'sat-runlogtasks-'));
    writeFileSync(join(dir, 'long.jsonl'), lines.join('\n'));
    await p.getByTestId('import').setInputFiles(join(dir, 'long.jsonl'));
    await p.getByText(/Opened the run log “long\.jsonl”: 20000 steps/).waitFor({ timeout: 120_000 });
    const banner = (await p.evaluate('performance.now() - window.__from')) as number;
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="runlog"] svg.recharts-surface').length >= 3, undefined, { timeout: 120_000 });
    await p.waitForTimeout(1_500);

    const crossed = (await p.evaluate('window.__charts')) as Record<string, { steps: number | string; values: number | string }>[];
    expect(crossed, 'one opened run with charts').toHaveLength(1);
    for (const [chart, width] of [['j', 3], ['kl', 1], ['clip', 1]] as const) {
      const c = crossed[0]![chart]!;
      expect(typeof c.steps, `${chart}: steps as a Float64Array`).toBe('number');
      expect(c.steps as number, chart).toBeGreaterThan(0);
      expect(c.steps as number, chart).toBeLessThanOrEqual(1_200);
      expect(c.values, `${chart}: values as one Float64Array`).toBe((c.steps as number) * width);
      expect(await points(p, `run-${chart}`), chart).toBe(c.steps);
      expect(await p.getByTestId(`run-${chart}-thinned`).innerText(), chart).toMatch(/^Drawn: [\d,]+ of 20,000 steps/);
    }
    expect(await p.getByTestId('run-j-last').innerText()).toBe(`step 20000: train reward ${((n - 1) % 89 / 100).toFixed(4)}`);
    expect(await p.getByTestId('run-clip-last').innerText()).toBe(`last: ${(0.02 + ((n - 1) % 7) / 1000).toFixed(4)}`);

    const longest = (await p.evaluate('window.__longest')) as number;
    const l = load();
    const tasks = (await p.evaluate('window.__tasks')) as string[];
    console.log(`20,000-step log, picked as a file on disk: banner seen at +${banner.toFixed(0)} ms; longest main-thread task from the pick to 1.5 s after the charts ${longest.toFixed(0)} ms (Long Tasks API, 0 = none over 50 ms; tasks: ${tasks.join(', ') || 'none'}), load ${l.toFixed(1)}${l <= 2 ? '' : ': not held to 100 ms at this load'}`);
    rmSync(dir, { recursive: true, force: true });
    if (l <= 2) expect(longest).toBeLessThanOrEqual(100);
    await p.context().close();
  }, 300_000);
});
