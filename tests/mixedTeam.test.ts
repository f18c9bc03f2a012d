/**
 * A language team of different model sizes (agentModels): each agent starts from its own shipped
 * model — the M agent has M's parameter count and gives M's logits, the S agents S's — and one
 * SAT stage runs on the mixed team. Models from public/models; seed 1.
 *
 * Not here: the config checks (tests/config.test.ts) or worker transport (tests/workers.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadModel } from '../src/model/weights';
import { runStages } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { parseConfig } from '../src/sat/config';
import type { LmAgent } from '../src/sat/agents/lm';

const load = async (name: string) => new Uint8Array(readFileSync(join(import.meta.dirname, '../public/models', `${name}.safetensors`)));

describe('mixed-size language team', () => {
  it('seats S, M, S and trains one stage', async () => {
    const cfg = parseConfig({ task: 'arithmetic', level: 1, agents: 3, agentModels: 'S,M,S', protocol: 'chain', stages: 1, batch: 2, group: 2, maxNew: 3, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, lr: 5e-4, epochs: 1 });
    const loaded: string[] = [];
    const exp = await createLlmExperiment(cfg, async (n) => (loaded.push(n), load(n)));
    expect(loaded.sort()).toEqual(['arithmetic-M', 'arithmetic-S']); // each file once
    const infos = await Promise.all(exp.team.map((a) => a.info()));
    const sizes = (n: string) => loadModel(new Uint8Array(readFileSync(join(import.meta.dirname, '../public/models', `${n}.safetensors`)))).cfg;
    expect(infos.map((i) => i.name)).toEqual(['arithmetic-S#0', 'arithmetic-M#1', 'arithmetic-S#2']);
    expect(infos[1]!.parameters).toBeGreaterThan(3 * infos[0]!.parameters);
    expect((exp.team[1] as LmAgent).model.cfg.d).toBe(sizes('arithmetic-M').d);
    expect((exp.team[0] as LmAgent).model.cfg.d).toBe(sizes('arithmetic-S').d);
    const [rec] = await runStages(exp, 1);
    expect(rec!.steps.map((s) => s.agent)).toEqual([0, 1, 2]);
    expect(Number.isFinite(rec!.jAfter)).toBe(true);
  }, 120_000);
});
