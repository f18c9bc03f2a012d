/**
 * The claims report's files as pure functions of the measured claims (src/studies/claims.ts):
 * `claimSvg`, one standalone SVG plot (series means with 95 % bars, fitted or reference curves
 * dashed; each series' group carries data-series / data-points so a test can read what was
 * plotted), and `claimsMarkdown`, docs/claims.md (the verdicts, then per claim the statement, the
 * rule, the tests, the plot and the exact commands).
 *
 * Not here: running the claims (src/studies/claims.ts), writing files (src/cli/claims.ts), the page's
 * charts of the same data (ClaimsView.tsx).
 */
import { CLAIM_COLOURS, niceTicks, plotYTicks } from '../app/claimsPlot';
import { type ClaimPlot, type ClaimResult, type ClaimsReport, type ClaimTest, type Estimate, sampleSize } from '../studies/claims';

const W = 560;
const H = 340;
/** Legend rows start below the title; the plot area below the legend. */
const LEGEND_TOP = 30;
const LEGEND_ROW = 14;
/** About the width of one legend character at font size 10. */
const CHAR_W = 5.6;

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const label = (x: number) => (Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(0) : String(Number(x.toPrecision(6))));

/** A standalone SVG of one claim's plot (module comment). */
export function claimSvg(plot: ClaimPlot): string {
  const pts = plot.series.flatMap((s) => s.points);
  if (pts.length === 0) throw new RangeError(`claimSvg: "${plot.title}" has no points`);
  for (const p of pts) {
    if (![p.x, p.y, p.lo, p.hi].every(Number.isFinite)) throw new RangeError(`claimSvg: "${plot.title}" has a non-finite point (x ${p.x}, y ${p.y}, CI [${p.lo}, ${p.hi}])`);
    if (plot.xLog && !(p.x > 0)) throw new RangeError(`claimSvg: "${plot.title}" has x = ${p.x} on a log axis`);
  }
  // The legend: items left to right, wrapping onto a new row when the width runs out.
  const items = plot.series.map((s, i) => ({ s, i, text: `${s.name}${s.errorBars ? ' (mean ± 95 % CI)' : ''}` }));
  const placed: { x: number; row: number; text: string; i: number; dashed: boolean }[] = [];
  let lx = 62;
  let row = 0;
  for (const it of items) {
    const w = 30 + it.text.length * CHAR_W;
    if (lx + w > W - 16 && lx > 62) {
      row++;
      lx = 62;
    }
    placed.push({ x: lx, row, text: it.text, i: it.i, dashed: !it.s.errorBars });
    lx += w + 14;
  }
  const M = { left: 62, right: 30, top: LEGEND_TOP + (row + 1) * LEGEND_ROW + 6, bottom: 48 };
  const yTicks = plotYTicks(plot);
  const [y0, y1] = [yTicks[0]!, yTicks.at(-1)!];
  const fx = plot.xLog ? Math.log10 : (x: number) => x;
  let xTicks: { x: number; text: string }[];
  let [x0, x1] = [Math.min(...pts.map((p) => fx(p.x))), Math.max(...pts.map((p) => fx(p.x)))];
  if (plot.xCategories) {
    xTicks = plot.xCategories.map((c, i) => ({ x: i, text: c }));
    [x0, x1] = [-0.5, plot.xCategories.length - 0.5];
  } else if (plot.xLog) {
    [x0, x1] = [Math.floor(x0 + 1e-9), Math.ceil(x1 - 1e-9)];
    if (x1 === x0) x1 = x0 + 1;
    xTicks = Array.from({ length: x1 - x0 + 1 }, (_, k) => ({ x: 10 ** (x0 + k), text: label(10 ** (x0 + k)) }));
  } else {
    const t = niceTicks(x0, x1, 6).filter((x) => Number.isInteger(x) || x1 - x0 < 6);
    [x0, x1] = [t[0]!, t.at(-1)!];
    xTicks = t.map((x) => ({ x, text: label(x) }));
  }
  const px = (x: number) => M.left + ((fx(x) - x0) / (x1 - x0)) * (W - M.left - M.right);
  const py = (y: number) => H - M.bottom - ((y - y0) / (y1 - y0)) * (H - M.top - M.bottom);
  const n = (v: number) => v.toFixed(1);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="11">`);
  out.push(`<title>${escapeXml(plot.title)}</title>`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${W / 2}" y="18" text-anchor="middle" font-size="13" font-weight="600">${escapeXml(plot.title)}</text>`);
  // Axes, grid and ticks.
  out.push(`<g class="axes" stroke="#444" fill="none">`);
  out.push(`<line x1="${M.left}" y1="${H - M.bottom}" x2="${W - M.right}" y2="${H - M.bottom}"/>`);
  out.push(`<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${H - M.bottom}"/>`);
  out.push(`</g>`);
  out.push(`<g class="y-ticks" font-size="10">`);
  for (const t of yTicks) {
    out.push(`<line x1="${M.left}" y1="${n(py(t))}" x2="${W - M.right}" y2="${n(py(t))}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${M.left - 5}" y="${n(py(t) + 3.5)}" text-anchor="end">${escapeXml(label(t))}</text>`);
  }
  out.push(`</g>`);
  out.push(`<g class="x-ticks" font-size="10">`);
  for (const t of xTicks) {
    const x = plot.xCategories ? M.left + ((t.x - x0) / (x1 - x0)) * (W - M.left - M.right) : px(t.x);
    out.push(`<line x1="${n(x)}" y1="${H - M.bottom}" x2="${n(x)}" y2="${H - M.bottom + 4}" stroke="#444"/>`);
    out.push(`<text x="${n(x)}" y="${H - M.bottom + 16}" text-anchor="middle">${escapeXml(t.text)}</text>`);
  }
  out.push(`</g>`);
  out.push(`<text class="x-label" x="${(M.left + W - M.right) / 2}" y="${H - 10}" text-anchor="middle">${escapeXml(plot.xLabel)}</text>`);
  out.push(`<text class="y-label" x="14" y="${(M.top + H - M.bottom) / 2}" text-anchor="middle" transform="rotate(-90 14 ${(M.top + H - M.bottom) / 2})">${escapeXml(plot.yLabel)}</text>`);
  for (const r of plot.refs) {
    out.push(`<g class="ref"><line x1="${M.left}" y1="${n(py(r.y))}" x2="${W - M.right}" y2="${n(py(r.y))}" stroke="#888" stroke-dasharray="2 3"/>`);
    out.push(`<text x="${W - M.right - 4}" y="${n(py(r.y) - 4)}" text-anchor="end" fill="#666">${escapeXml(r.label)}</text></g>`);
  }
  // Series: the error bars of series i are nudged sideways so that bars at one x do not overlap.
  const barred = plot.series.filter((s) => s.errorBars);
  plot.series.forEach((s, i) => {
    const colour = CLAIM_COLOURS[i % CLAIM_COLOURS.length]!;
    const nudge = s.errorBars ? (barred.indexOf(s) - (barred.length - 1) / 2) * 4 : 0;
    const sx = (x: number) => (plot.xCategories ? M.left + ((x - x0) / (x1 - x0)) * (W - M.left - M.right) : px(x)) + nudge;
    out.push(`<g class="series" data-series="${escapeXml(s.name)}" data-points="${s.points.length}" stroke="${colour}" fill="${colour}">`);
    if (!plot.xCategories && s.points.length > 1) {
      out.push(`<polyline fill="none" stroke-width="1.6"${s.errorBars ? '' : ' stroke-dasharray="5 4"'} points="${s.points.map((p) => `${n(sx(p.x))},${n(py(p.y))}`).join(' ')}"/>`);
    }
    if (s.errorBars) {
      for (const p of s.points) {
        const x = sx(p.x);
        out.push(`<path class="ci" fill="none" d="M${n(x)} ${n(py(p.lo))}V${n(py(p.hi))}M${n(x - 3)} ${n(py(p.lo))}H${n(x + 3)}M${n(x - 3)} ${n(py(p.hi))}H${n(x + 3)}"/>`);
        out.push(`<circle cx="${n(x)}" cy="${n(py(p.y))}" r="2.6"/>`);
      }
    }
    out.push(`</g>`);
  });
  out.push(`<g class="legend" font-size="10">`);
  for (const p of placed) {
    const colour = CLAIM_COLOURS[p.i % CLAIM_COLOURS.length]!;
    const y = LEGEND_TOP + p.row * LEGEND_ROW + 4;
    out.push(`<line x1="${n(p.x)}" y1="${y}" x2="${n(p.x + 22)}" y2="${y}" stroke="${colour}" stroke-width="2"${p.dashed ? ' stroke-dasharray="5 4"' : ''}/>`);
    out.push(`<text x="${n(p.x + 27)}" y="${y + 3.5}">${escapeXml(p.text)}</text>`);
  }
  out.push(`</g>`);
  out.push(`</svg>`);
  return out.join('\n') + '\n';
}

const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : String(x));
const interval = (e: Estimate) => `${f3(e.mean)} [${f3(e.lo)}, ${f3(e.hi)}]`;
const needs = (t: ClaimTest) =>
  t.direction === 'above' ? `CI above ${t.threshold}` : `CI contains ${t.threshold}${t.exclude !== undefined ? `, excludes ${t.exclude}` : ''}`;

export interface MarkdownOptions {
  /** Where the SVGs lie, relative to the markdown file ("claims"). */
  readonly svgDir: string;
  /** Where the data lie, relative to the markdown file (for the reader). */
  readonly dataPath: string;
  /** Seconds each claim took on this machine, by id. */
  readonly seconds?: Readonly<Record<number, number>>;
}

export const svgName = (c: Pick<ClaimResult, 'id'>) => `claim-${c.id}.svg`;

/** docs/claims.md (module comment). */
export function claimsMarkdown(report: ClaimsReport, opts: MarkdownOptions): string {
  const scaleWords = report.scale === 'full'
    ? 'toy scale (the presets\u2019 tiny models and games, a few stages; each claim\u2019s section says exactly what ran)'
    : 'the quick scale (seconds; for checking the format of the report, not its numbers)';
  const lines: string[] = [
    '# The claims, measured',
    '',
    '<!-- Written by `npm run claims` (src/cli/claims.ts); edit the claims in src/studies/claims.ts, not this file. -->',
    '',
    `The five claims of [docs/method.md §10b](method.md#s10b), each run over several seeds at ${scaleWords}. ` +
      'A verdict is a verdict **at this scale**: it says what these runs show, not what the paper\u2019s models would do.',
    '',
    'Every interval is a 95 % confidence interval: Student t over seeds (paired by seed where two variants share a seed); ' +
      'for claim 3\u2019s shares near 1, Wilson\u2019s score interval over the stages pooled across seeds; for claim 5\u2019s exponent, a percentile bootstrap over seeds. The rule for every test: it **holds** when the interval ' +
      'lies on the claimed side of its threshold, **does not hold** when it lies on the other side, and is **not established** ' +
      'when it contains the threshold; a claim holds when all its tests hold and does not hold when any does not. ' +
      `The numbers behind this page are in [\`${opts.dataPath}\`](${opts.dataPath}); the page\u2019s **Claims** view draws the same data and re-runs the tabular claims (2, 3, 5) live.`,
    '',
    '| # | claim | verdict | measured |',
    '|---|---|---|---|',
    ...report.claims.map((c) => `| ${c.id} | [${c.title}](#claim-${c.id}) | **${c.verdict}** | ${c.tests.map((t) => `${t.label}: ${interval(t.estimate)}`).join('; ')} |`),
    '',
    'Reproduce everything: `npm run claims` (writes this file, `docs/claims/*.svg` and the page\u2019s data); one claim: `npm run claims -- --only N`; ' +
      'the seconds-long format check CI runs: `npm run claims -- --quick --out DIR`; this page and the SVGs again from the data, running nothing: `npm run claims -- --render`.',
  ];
  for (const c of report.claims) {
    const secs = opts.seconds?.[c.id];
    lines.push(
      '',
      `## <a id="claim-${c.id}"></a>${c.id}. ${c.title}`,
      '',
      `> ${c.statement}`,
      '',
      `**Verdict: ${c.verdict}** at this scale${report.scale === 'quick' ? ' (quick)' : ''}.`,
      '',
      `What ran: ${c.setup}.${secs !== undefined ? ` It took ${secs.toFixed(0)} s on this machine.` : ''}`,
      '',
      `Rule: ${c.rule}`,
      '',
      '| test | mean [95 % CI] | n | needs | verdict |',
      '|---|---|---|---|---|',
      ...c.tests.map((t) => `| ${t.label} | ${interval(t.estimate)} | ${sampleSize(t.estimate)} | ${needs(t)} | ${t.verdict} |`),
      '',
      c.summary,
      '',
      `![${c.plot.title}](${opts.svgDir}/${svgName(c)})`,
      '',
      'Commands:',
      '',
      '```sh',
      ...c.commands,
      '```',
    );
  }
  return lines.join('\n') + '\n';
}
