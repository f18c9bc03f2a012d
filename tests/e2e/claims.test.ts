/**
 * The page's Claims view in real Chromium (tests/e2e/harness.ts): it opens from the step bar, shows
 * the five claims from the committed data (src/app/claims/data.json) with a plot each, their
 * verdicts in words and their commands; re-running tabular claim 2 live at the quick scale gives
 * the numbers Node gives for the same claim (a seed fixes a run, in any environment); a cancelled
 * re-run changes nothing; the view closes back onto the playground. The committed SVGs of
 * docs/claims/ parse as XML in Chromium's own parser.
 *
 * Not here: the report's format and the verdict rule (tests/claims.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ClaimsReport, runClaim, VERDICTS } from '../../src/studies/claims';
import { svgName } from '../../src/cli/claimsReport';
import { playgroundForFile, ROOT, settled } from './harness';

const committed = JSON.parse(readFileSync(join(ROOT, 'src/app/claims/data.json'), 'utf8')) as ClaimsReport;
const f3 = (x: number) => x.toFixed(3);

describe('the Claims view', () => {
  const pg = playgroundForFile();

  it('shows the five committed claims with a plot, a verdict in words and the commands each; re-runs claim 2 live as Node does; closes again', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);
    await p.getByTestId('open-claims').click();
    await p.getByTestId('claims-view').waitFor();
    expect(await p.getByTestId('step-agent').isVisible()).toBe(false);

    for (const c of committed.claims) {
      const chart = p.getByTestId(`claim-${c.id}-chart`);
      const plotted = c.plot.series.reduce((a, s) => a + s.points.length, 0);
      expect(Number(await chart.getAttribute('data-points')), `claim ${c.id}`).toBe(plotted);
      // recharts drew one line per series into an SVG.
      expect(await chart.locator('svg .recharts-line').count(), `claim ${c.id} lines`).toBe(c.plot.series.length);
      const verdict = await p.getByTestId(`claim-${c.id}-verdict`).innerText();
      expect(VERDICTS).toContain(verdict);
      expect(verdict).toBe(c.verdict);
      expect(await p.getByTestId(`claim-${c.id}-commands`).innerText()).toContain(`npm run claims -- --only ${c.id}`);
    }
    // The language claims cannot be re-run here; the tabular ones can.
    expect(await p.getByTestId('claim-1-rerun-quick').count()).toBe(0);
    expect(await p.getByTestId('claim-2-rerun-quick').count()).toBe(1);

    // A cancelled re-run (claim 5 at the full scale: 350 stages) leaves the committed result.
    await p.getByTestId('claim-5-rerun-full').click();
    await p.getByTestId('claims-progress').waitFor();
    await p.getByTestId('claims-cancel').click();
    await p.getByTestId('claims-note').getByText(/Claim 5: the re-run was cancelled/).waitFor();
    expect(await p.getByTestId('claim-5').getAttribute('data-live')).toBe('committed');

    // Claim 2 live, quick: the page's numbers are Node's.
    const node = (await runClaim(2, 'quick'))!;
    await p.getByTestId('claim-2-rerun-quick').click();
    await p.locator('[data-testid="claim-2"][data-live="quick"]').waitFor({ timeout: 60_000 });
    const card = p.getByTestId('claim-2');
    expect(await p.getByTestId('claim-2-verdict').innerText()).toBe(node.verdict);
    const text = await card.locator('.claim-tests').innerText();
    for (const t of node.tests) expect(text).toContain(`${f3(t.estimate.mean)} [${f3(t.estimate.lo)}, ${f3(t.estimate.hi)}]`);
    expect(Number(await p.getByTestId('claim-2-chart').getAttribute('data-points'))).toBe(node.plot.series.reduce((a, s) => a + s.points.length, 0));
    await card.getByText('Show the committed result').click();
    expect(await card.getAttribute('data-live')).toBe('committed');

    await p.getByTestId('claims-close').click();
    await p.getByTestId('step-agent').waitFor();
    expect(await p.getByTestId('claims-view').count()).toBe(0);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 300_000);

  it('the committed SVGs of docs/claims parse as XML in Chromium, with each plotted series', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    for (const c of committed.claims) {
      const svg = readFileSync(join(ROOT, 'docs/claims', svgName(c)), 'utf8');
      const r = await p.evaluate((src) => {
        const doc = new DOMParser().parseFromString(src, 'image/svg+xml');
        return {
          error: doc.querySelector('parsererror')?.textContent ?? null,
          root: doc.documentElement.localName,
          series: [...doc.querySelectorAll('g.series')].map((g) => [g.getAttribute('data-series'), Number(g.getAttribute('data-points'))]),
        };
      }, svg);
      expect(r.error, `claim ${c.id}`).toBeNull();
      expect(r.root).toBe('svg');
      expect(r.series).toEqual(c.plot.series.map((s) => [s.name, s.points.length]));
    }
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 120_000);
});
