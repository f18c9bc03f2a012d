/**
 * The command line's `backend = webgpu` (src/cli/gpu.ts + createLlmExperiment's `backendOf`): a
 * language team with one GPUDevice per agent, in-process, on this machine's adapter (SwiftShader
 * here). A shrunk arith-team (2 agents, batch 2 × group 2, 1 epoch, 8 held-out problems, no
 * geometric gain, one stage) — what a real GPU runs at full size (docs/performance.md "On a real GPU"):
 *   - every agent's model is on the WebGPU backend, and the stage asked the GPU for work;
 *   - the same seed gives the same first agent step twice (its record, bit for bit);
 *   - the team starts where the CPU team starts (held-out J of the initial team: the samplers
 *     write the same tokens; tests/webgpu/agentApi.test.ts checks that per agent);
 *   - --profile's counting works on GPU seats (passes counted; no plain-step rate timed there);
 *   - release() destroys the devices without reporting a loss; the CLI refuses --agent-model
 *     with backend = webgpu with a message (exit status 2).
 *
 * Not here: the kernels (the other files of this folder), the page's workers (agentApi.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliGpuBackends } from '../../src/cli/gpu';
import { attachProfiler, profileTable } from '../../src/cli/profile';
import { loadFromDisk } from '../../src/cli/models';
import { LmAgent } from '../../src/sat/agents/lm';
import { presetConfig } from '../../src/sat/presets';
import { stepThrough } from '../../src/sat/experiment';
import { createLlmExperiment } from '../../src/sat/llmExperiment';
import type { StageRecord } from '../../src/sat/stage';
import { gpu } from './gpu';

const cfg = presetConfig('arith-team', { agents: '2', batch: '2', group: '2', epochs: '1', evalEpisodes: '8', geoIters: '0', stages: '1', seed: '6', backend: 'webgpu', certEpisodes: '32' });

/** A GPU team; its first agent step, and (whole) its first stage — ~1 min on SwiftShader, most of it per-dispatch cost. */
async function gpuRun(whole: boolean) {
  const g = cliGpuBackends();
  try {
    const exp = await createLlmExperiment(cfg, loadFromDisk, { backendOf: (i) => g.backendOf(i) });
    // --profile's counting (the whole run only): it wraps the agents in place and changes no number.
    const profiling = whole ? attachProfiler(exp) : null;
    const before = g.counts();
    const gen = stepThrough(exp);
    const first = await gen.next();
    if (first.done) throw new Error('the stage ended before its first agent step');
    let stage: StageRecord | null = null;
    if (whole) for (let r = await gen.next(); ; r = await gen.next()) if (r.done) { stage = r.value; break; }
    return { exp, first: first.value, stage, profile: stage && profiling ? profileTable(stage, profiling) : '', work: g.counts().dispatches - before.dispatches, adapters: g.adapters, lost: g.lost() };
  } finally {
    g.release();
  }
}

describe.skipIf(typeof gpu === 'string')('the CLI on backend = webgpu', () => {
  it('runs a language stage with one device per agent, the same twice for one seed, from the CPU team\u2019s start', async () => {
    const a = await gpuRun(true);
    expect(a.adapters).toHaveLength(2);
    for (const agent of a.exp.team) {
      expect(agent).toBeInstanceOf(LmAgent);
      expect((agent as LmAgent).model.be.name).toMatch(/webgpu/i);
    }
    expect(a.work).toBeGreaterThan(0);
    expect(a.lost).toBeNull();
    const s = a.stage!;
    // The profile counted the GPU seats' passes; the plain-step rate is not timed on a GPU (profile.ts).
    expect(a.profile).toMatch(/^total\s+\d+\s+100 %\s+[1-9]/m);
    expect(a.profile).not.toMatch(/plain training step/);
    expect(Number.isFinite(s.jAfter)).toBe(true);
    expect(Number.isFinite(s.metrics['cert/lower'] as number)).toBe(true);
    // The same seed again, up to the first agent's update (half the cost): the same step record.
    const b = await gpuRun(false);
    expect(b.first.agent).toBe(a.first.agent);
    expect(JSON.stringify(b.first)).toBe(JSON.stringify(a.first));
    const cpu = await createLlmExperiment({ ...cfg, backend: 'cpu' }, loadFromDisk);
    expect(a.exp.j0).toBe(cpu.j0);
    console.log(`[cli webgpu] ${a.adapters[0]}: stage 1 J ${a.exp.j0} → ${s.jAfter} (CPU team starts at ${cpu.j0}), ${a.work} dispatches`);
  }, 600_000);

  it('refuses --agent-model with backend = webgpu, naming both', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/sat.ts', '--preset', 'arith-team', '--set', 'backend=webgpu', '--agent-model', '1=/nonexistent'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--agent-model with backend = webgpu/);
  });
});
