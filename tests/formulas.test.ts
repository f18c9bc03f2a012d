/**
 * The charts' formula cards (src/app/charts/formulas.ts) on records from real runs: a short tabular
 * run (the climbing preset, seed 7, 3 stages, episodic form; one more stage under certForm = gamma)
 * and a tiny language run (a random 1-layer model built here, a 2-agent chain, 1 stage); the order
 * card on that run and the same seed under the reverse order. For every
 * card and every record it fills: each slot names a metric key the record really has, the
 * substituted number is exactly that metric, the shown text is the chart's own format, the TeX
 * typesets with KaTeX (the page's options) and the typeset HTML carries each number once as
 * data-metric / data-value; the relation sign follows the numbers; the certificate's sum adds up
 * with the numbers shown; each card's docs sections exist; and the charts rendered on the server
 * include their card.
 *
 * Not here: the page (tests/e2e/formulas.test.ts clicks terms and compares with the page's numbers).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import katex from 'katex';
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { makeCard } from '../src/model/card';
import { modelConfig } from '../src/model/config';
import { vocabSize } from '../src/model/tokenizer';
import { initWeights, saveModel } from '../src/model/weights';
import { parseConfig } from '../src/sat/config';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { presetConfig } from '../src/sat/presets';
import type { AgentStepRecord, StageRecord } from '../src/sat/stage';
import { bindFormula, certFormulaId, FORMULAS, formatSlot, KATEX_OPTIONS, orderFormula, slotKey, texNumber, UNDECIDED_REL, type FormulaDef } from '../src/app/charts/formulas';
import { teamBoundEpisodes } from '../src/sat/certificate';
import { AdvantageChart, BetaChart, JChart, KlChart, OrderChart, ViolationChart, WaterfallChart, violationPointsFromStages } from '../src/app/charts';

let tabular: StageRecord[];
let gamma: StageRecord[];
let lm: StageRecord[];
/** The same language run with the mixture estimator (docs/certificate.md §5.4). */
let lmMixture: StageRecord[];
/** The same seed under the reverse order, 2 stages: a second series for the order card. */
let reverse: StageRecord[];

beforeAll(async () => {
  tabular = await runStages(createTabularExperiment(presetConfig('climbing', { seed: 7 })), 3);
  gamma = await runStages(createTabularExperiment(presetConfig('climbing', { seed: 7, certForm: 'gamma' })), 1);
  reverse = await runStages(createTabularExperiment(presetConfig('climbing', { seed: 7, order: 'reverse' })), 2);
  const tiny = modelConfig({ vocab: vocabSize, d: 32, layers: 1, heads: 2, hidden: 64, maxSeq: 64 });
  const bytes = saveModel(tiny, initWeights(tiny, new Rng(5)), makeCard(tiny, { name: 'arithmetic-S', task: 'arithmetic level 1', dataSeed: 5, heldOutAccuracy: 0, pretrainSeconds: 0, quant: 'f32' }));
  const lmSettings = { task: 'arithmetic', level: 1, agents: 2, protocol: 'chain', batch: 2, group: 4, evalEpisodes: 8, maxNew: 4, lr: 1e-4, epochs: 1, stages: 1, geoIters: 0 };
  lm = await runStages(await createLlmExperiment(parseConfig(lmSettings), async () => bytes), 1);
  const mixed = await createLlmExperiment(parseConfig(lmSettings), async () => bytes);
  mixed.env.certEstimator = 'mixture';
  lmMixture = await runStages(mixed, 1);
}, 120_000);

/** Every (card, metrics, agent) a run's records fill: stage cards with each stage, step cards with each step. */
function fills(def: FormulaDef, records: readonly StageRecord[]): { what: string; metrics: StageRecord['metrics']; agent?: number; stage: StageRecord }[] {
  if (def.source === 'stage') return records.map((r) => ({ what: `stage ${r.stage}`, metrics: r.metrics, stage: r }));
  return records.flatMap((r) => r.steps.map((s: AgentStepRecord) => ({ what: `stage ${r.stage} agent ${s.agent}`, metrics: s.metrics, agent: s.agent, stage: r })));
}

/** The cards a run's records can fill: the waterfall card of the form the run recorded. */
function cardsFor(records: readonly StageRecord[]): FormulaDef[] {
  const cert = certFormulaId(records[0]!.metrics, records[0]!.certificate.form);
  return Object.values(FORMULAS).filter((d) => (d.id.startsWith('waterfall') ? d.id === cert : true));
}

const runs = () => [
  { name: 'tabular (climbing, episodic)', records: tabular },
  { name: 'tabular (climbing, γ form)', records: gamma },
  { name: 'language (tiny chain)', records: lm },
];

describe('formula cards on real records', () => {
  it('every slot names a metric the records produce, and shows exactly that number in the chart\'s format', () => {
    let checked = 0;
    for (const run of runs()) {
      for (const def of cardsFor(run.records)) {
        for (const f of fills(def, run.records)) {
          const card = bindFormula(def, f.metrics, f.agent);
          expect(card.slots.map((s) => s.name)).toEqual(def.slots.map((s) => s.name));
          for (const s of card.slots) {
            const where = `${run.name}, ${def.id}, ${f.what}, slot ${s.name}`;
            expect(s.key, where).toBe(slotKey(s, f.agent));
            expect(Object.keys(f.metrics), where).toContain(s.key);
            const raw = f.metrics[s.key];
            expect(typeof raw, where).toBe('number');
            expect(Number.isFinite(raw as number), where).toBe(true);
            expect(s.value, where).toBe(raw);
            expect(s.shown, where).toBe(formatSlot(s.format, raw as number));
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('every card typesets with KaTeX, each number once, as data-metric / data-value / data-term', () => {
    for (const run of runs()) {
      for (const def of cardsFor(run.records)) {
        for (const f of fills(def, run.records)) {
          const card = bindFormula(def, f.metrics, f.agent);
          const html = katex.renderToString(card.tex, KATEX_OPTIONS);
          const found = [...html.matchAll(/data-metric="([^"]+)" data-value="([^"]+)" data-term="([^"]+)"/g)].map((m) => [m[1], m[2], m[3]]);
          expect(found, `${run.name}, ${def.id}, ${f.what}`).toEqual(card.slots.map((s) => [s.key, String(s.value), s.term]));
          for (const [key, v] of found) expect(Number(v), `${def.id} ${key}`).toBe(f.metrics[key!]); // the attribute reads back as the metric
        }
      }
    }
  });

  it('a TeX error is thrown, not drawn; of the HTML extension only \\htmlData is trusted', () => {
    expect(() => katex.renderToString(String.raw`\notACommand{1}`, KATEX_OPTIONS)).toThrow(/notACommand/);
    // An untrusted command is drawn as its source in KaTeX's error colour, never as a link.
    expect(katex.renderToString(String.raw`\href{https://example.com}{x}`, KATEX_OPTIONS)).not.toContain('<a ');
    expect(katex.renderToString(String.raw`\htmlData{metric=a}{1}`, KATEX_OPTIONS)).toContain('data-metric="a"');
  });

  it('the relation sign follows the record: held ⇔ ≤ (unchecked ⇔ ≤?) in the certificate and J cards, q ≤ δ ⇔ ≤ in the KL card', () => {
    const signs = (tex: string) => [...tex.matchAll(/\\;(\\le|>|\\overset\{\?\}\{\\le\})\\;/g)].map((m) => m[1]);
    const seen = new Set<string>();
    for (const run of runs()) {
      for (const r of run.records) {
        const id = certFormulaId(r.metrics, r.certificate.form);
        const held = r.metrics['cert/held'];
        const want = held === 1 ? '\\le' : held === 0 ? '>' : UNDECIDED_REL;
        expect(signs(bindFormula(FORMULAS[id], r.metrics).tex)).toEqual([want]);
        expect(signs(bindFormula(FORMULAS.j, r.metrics).tex)).toEqual([want]);
        seen.add(want);
        for (const s of r.steps) {
          expect(signs(bindFormula(FORMULAS.kl, s.metrics, s.agent).tex)).toEqual([s.check.ok ? '\\le' : '>']);
        }
      }
    }
    expect(seen.has('\\le')).toBe(true); // at least one held stage was checked
    expect(seen.has(UNDECIDED_REL)).toBe(true); // and one unchecked language stage
  });

  it('a language stage gets the team-level card with its own c and N; tabular and γ stages keep theirs', () => {
    for (const r of lm) {
      expect(certFormulaId(r.metrics, r.certificate.form)).toBe('waterfall-team');
      const v = Object.fromEntries(bindFormula(FORMULAS['waterfall-team'], r.metrics).slots.map((s) => [s.name, s.value]));
      expect(v.clip).toBe(r.steps[0]!.cert.clip);
      // N is every round the sequential certificate drew: its last look's units × episodes per unit.
      const q = r.certificate.sequential!;
      const N = (q.looks[q.looks.length - 1]!.units * r.certificate.team!.episodes) / q.roundUnits;
      expect(v.episodes).toBe(N);
      expect(teamBoundEpisodes(r.certificate)).toBe(N);
    }
    // With the mixture estimator: its own card, with its baseline b and N = every pair's two episodes.
    for (const r of lmMixture) {
      expect(certFormulaId(r.metrics, r.certificate.form)).toBe('waterfall-mixture');
      const v = Object.fromEntries(bindFormula(FORMULAS['waterfall-mixture'], r.metrics).slots.map((s) => [s.name, s.value]));
      expect(v.baseline).toBe(r.metrics['cert/baseline']);
      const q = r.certificate.sequential!;
      expect(v.episodes).toBe(q.looks[q.looks.length - 1]!.units * 2);
      expect(teamBoundEpisodes(r.certificate)).toBe(v.episodes);
    }
    for (const r of tabular) expect(certFormulaId(r.metrics, r.certificate.form)).toBe('waterfall');
    for (const r of gamma) expect(certFormulaId(r.metrics, r.certificate.form)).toBe('waterfall-gamma');
    // A record written before cert/clip existed opens with the episodic card.
    const { ['cert/clip']: _, ...old } = lm[0]!.metrics;
    expect(certFormulaId(old, 'episodic')).toBe('waterfall');
  });

  it('the certificate card adds up: gain − shift − bias − finite = lower with the numbers it shows, in both forms', () => {
    for (const r of [...tabular, ...gamma, ...lm, ...lmMixture]) {
      const id = certFormulaId(r.metrics, r.certificate.form);
      const v = Object.fromEntries(bindFormula(FORMULAS[id], r.metrics).slots.map((s) => [s.name, s.value]));
      const sum = v.gain! - (v.shift ?? 0) - (v.bias ?? 0) - v.finite!; // the team-level card has no shift or bias term
      expect(Math.abs(sum - v.lower!)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(v.lower!)));
      expect(v.dJ).toBe(r.jAfter - r.jBefore);
    }
    // ΔJ in the J card is J_k − J_{k−1}: consecutive stages chain.
    for (let k = 1; k < tabular.length; k++) expect(tabular[k]!.jBefore).toBe(tabular[k - 1]!.metrics['team/J']);
  });

  it('the order card: one row per series, each number from that series\' last stage, typeset', () => {
    const series = [{ label: 'σ = 0→1→2', stages: tabular }, { label: 'σ = 2→1→0', stages: reverse }];
    const def = orderFormula(series.map((x) => x.label));
    const lasts = series.map((x) => x.stages[x.stages.length - 1]!);
    const card = bindFormula(def, lasts.map((r) => r.metrics));
    expect(card.slots).toHaveLength(6);
    for (const sl of card.slots) {
      expect(sl.value, sl.name).toBe(lasts[sl.from!]!.metrics[sl.key]);
      expect(sl.term).toBe(`s${sl.from}`);
    }
    expect(lasts[0]!.metrics['team/J']).not.toBe(lasts[1]!.metrics['team/J']); // two different runs, two different rows
    const html = katex.renderToString(card.tex, KATEX_OPTIONS);
    expect([...html.matchAll(/data-metric="([^"]+)" data-value="([^"]+)"/g)].map((m) => Number(m[2]))).toEqual(card.slots.map((x) => x.value));
    expect(def.note).toContain('σ₁: σ = 0→1→2; σ₂: σ = 2→1→0');
    expect(renderToString(h(OrderChart, { series }))).toContain('data-formula="order"');
  });

  it('numbers become TeX: the typographic minus, e-notation, percentages and the missing dash', () => {
    expect(texNumber('\u22121.2e\u22123')).toBe('-1.2\\times 10^{-3}');
    expect(texNumber('4.5 %')).toBe('4.5\\,\\%');
    expect(texNumber('47,213')).toBe('47{,}213');
    expect(texNumber('—')).toBe('\\text{—}');
    expect(texNumber('0.125')).toBe('0.125');
  });

  it('a card that needs an agent says so; a record without the metric shows NaN as the dash, not a made-up number', () => {
    expect(() => bindFormula(FORMULAS.kl, tabular[0]!.steps[0]!.metrics)).toThrow(/needs an agent/);
    const card = bindFormula(FORMULAS.kl, {}, 0);
    for (const s of card.slots) {
      expect(Number.isNaN(s.value)).toBe(true);
      expect(s.shown).toBe('—');
    }
    expect(() => katex.renderToString(card.tex, KATEX_OPTIONS)).not.toThrow();
  });

  it('every card cites docs sections that exist', () => {
    const text = { 'docs/method.md': readFileSync(join(import.meta.dirname, '../docs/method.md'), 'utf8'), 'docs/certificate.md': readFileSync(join(import.meta.dirname, '../docs/certificate.md'), 'utf8') };
    for (const def of [...Object.values(FORMULAS), orderFormula(['one order'])]) {
      const parts = def.docs.split(';').map((p) => p.trim());
      for (const part of parts) {
        const file = part.match(/^(docs\/\w+\.md)/)?.[1] as keyof typeof text | undefined;
        expect(file && text[file], `${def.id}: ${part}`).toBeTruthy();
        const secs = [...part.matchAll(/§(\d+(?:\.\d+)?)/g)].map((m) => m[1]!);
        expect(secs.length, `${def.id}: ${part}`).toBeGreaterThan(0);
        for (const sec of secs) {
          const heading = file === 'docs/method.md' ? new RegExp(`^#+ <a id="s${sec.replace('.', '-')}"></a>${sec.replace('.', '\\.')}[ .]`, 'm') : new RegExp(`^#+ ${sec.replace('.', '\\.')}[ .]`, 'm');
          expect(heading.test(text[file!]), `${def.id} cites ${file} §${sec}`).toBe(true);
        }
      }
    }
  });

  it('each chart rendered on the server carries its card (closed: KaTeX loads on opening)', () => {
    const rec = tabular[tabular.length - 1]!;
    const step = rec.steps[rec.steps.length - 1]!;
    const charts: [string, ReturnType<typeof h>][] = [
      ['waterfall', h(WaterfallChart, { record: rec })],
      ['j', h(JChart, { records: tabular })],
      ['adv', h(AdvantageChart, { step })],
      ['kl', h(KlChart, { step })],
      ['beta', h(BetaChart, { records: tabular, nAgents: 3 })],
    ];
    for (const [id, el] of charts) {
      const html = renderToString(el);
      expect(html, id).toContain(`data-formula="${id}"`);
      expect(html, id).toContain(FORMULAS[id as keyof typeof FORMULAS].docs.replace(/&/g, '&amp;'));
    }
    // The violation chart shows its card only with points to plot (a step with a rate > 0).
    const pts = violationPointsFromStages(tabular);
    const html = renderToString(h(ViolationChart, { points: pts, step }));
    expect(html.includes('data-formula="violation"')).toBe(pts.some((p) => p.rate > 0));
    // The waterfall in the other form than the run recorded: no card, and words saying why.
    const other = renderToString(h(WaterfallChart, { record: rec, form: 'gamma' })).replace(/<!-- -->/g, '');
    expect(other).not.toContain('data-formula=');
    expect(other).toContain('certForm = episodic');
    // A mixture stage: its own card, and the team-bound line says the episodes came in pairs of both teams.
    const mix = lmMixture[0]!;
    const mixHtml = renderToString(h(WaterfallChart, { record: mix })).replace(/<!-- -->/g, '');
    expect(mixHtml).toContain('data-formula="waterfall-mixture"');
    expect(mixHtml).toContain(`team-level bound: ${teamBoundEpisodes(mix.certificate).toLocaleString('en-US')} episodes`);
    expect(mixHtml).toContain('in pairs of one episode of each team (mixture)');
    expect(renderToString(h(WaterfallChart, { record: lm[0]! }))).not.toContain('(mixture)');
  });
});
