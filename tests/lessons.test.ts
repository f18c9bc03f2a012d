/**
 * Every lesson proves itself: each preset's worksheet question carries the claim its lesson makes
 * (src/studies/worksheet.ts `lesson`), and here each preset runs on its own settings and default
 * seed — exactly what the page opens with — and the claim must hold on that run. The coordination
 * lesson is checked end to end as well: SAT's final J more than LESSON_GAP above simultaneous' on
 * the default seed, and the preset card's seed counts equal to the committed claims data (one
 * source for the gallery and the Claims view).
 *
 * Not here: whether each answer reads the records right (tests/worksheet.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { findPreset, PRESETS, presetConfig } from '../src/sat/presets';
import { lessonSeeds, type ClaimsReport } from '../src/studies/claims';
import { answerWorksheet, LESSON_GAP, WORKSHEET } from '../src/studies/worksheet';
import data from '../src/app/claims/data.json';

const load = async (name: string) => new Uint8Array(readFileSync(join(import.meta.dirname, '../public/models', `${name}.safetensors`)));

/** The preset's question answered on its default settings and seed (what the page opens with). */
async function answerOnDefault(name: string) {
  const p = findPreset(name);
  const cfg = presetConfig(name);
  const exp = p.kind === 'tabular' ? createTabularExperiment(cfg) : await createLlmExperiment(cfg, load);
  const r = answerWorksheet(name, await runStages(exp, WORKSHEET[name]!.stages));
  if (!r.ready) throw new Error(`${name}: not ready`);
  return r.answer;
}

describe('each lesson holds on its preset\u2019s default seed', () => {
  for (const p of PRESETS.filter((x) => x.kind === 'tabular')) {
    it(`${p.name}: ${WORKSHEET[p.name]!.lesson.says}`, async () => {
      const a = await answerOnDefault(p.name);
      expect(WORKSHEET[p.name]!.lesson.holds(a.facts), `${p.name}: ${a.text}`).toBe(true);
    });
  }
  // The language lessons run their shipped models at full size: minutes on two cores. plan-team-2
  // (the largest batch) goes first: after the others in one process the CPU kernels' memory
  // arena cannot grow by the 48 MiB its attention scratch asks for.
  const lm = PRESETS.filter((x) => x.kind === 'llm').sort((a, b) => Number(b.name === 'plan-team-2') - Number(a.name === 'plan-team-2'));
  for (const p of lm) {
    it(`${p.name}: ${WORKSHEET[p.name]!.lesson.says}`, async () => {
      const a = await answerOnDefault(p.name);
      expect(WORKSHEET[p.name]!.lesson.holds(a.facts), `${p.name}: ${a.text}`).toBe(true);
    }, 900_000);
  }
});

describe('the coordination lesson', () => {
  it(`on its default seed SAT ends more than ${LESSON_GAP} above simultaneous`, async () => {
    const final = async (scheme: string) => (await runStages(createTabularExperiment(presetConfig('coordination', { scheme })), presetConfig('coordination').stages)).at(-1)!.jAfter;
    const sat = await final('sequential');
    const sim = await final('simultaneous');
    expect(sat - sim, `SAT ${sat}, simultaneous ${sim}`).toBeGreaterThan(LESSON_GAP);
  });

  it('the preset card cites the seed counts the Claims view and docs/claims.md print, and no interval', () => {
    const c2 = (data as unknown as ClaimsReport).claims.find((c) => c.id === 2)!;
    const line = lessonSeeds(c2.perSeed.lessonSatFinalJ!, c2.perSeed.lessonSimultaneousFinalJ!, c2.seeds);
    expect(c2.summary).toContain(line);
    const [, atSat, atSim, gap, of] = /on (\d+) of seeds \S+ and simultaneous on (\d+); SAT ends more than \d+ above simultaneous on (\d+) of (\d+)/.exec(line)!;
    const text = findPreset('coordination').lookFor;
    expect(text).toContain(`SAT reaches an optimum on ${atSat} and simultaneous on ${atSim}`);
    expect(text).toContain(`more than ${LESSON_GAP} above on ${gap} of ${of}`);
    expect(text).toContain(`seed (${presetConfig('coordination').seed})`);
    // A gallery card quoting an interval would have to agree with the Claims view's verdict on it.
    for (const p of PRESETS) expect(p.lookFor, p.name).not.toMatch(/\[[−-]?\d+\.\d+, [−-]?\d+\.\d+\]/);
  });
});
