/**
 * The record and payload schemas (src/sat/records.ts, src/app/payloads.ts) and the wording of
 * their failures (src/core/schema.ts): a real stage record conforms, and each kind of mismatch
 * reads "<path> is <value>, expected <what>" with the path of the first wrong value.
 */
import { describe, expect, it } from 'vitest';
import { firstProblem } from '../src/core/schema';
import { failedField, seatCheckpointSchema, stepRefSchema } from '../src/app/payloads';
import { seatOnnx } from '../src/app/onnxSeatRef';
import { createTabularExperiment, runStages } from '../src/sat/experiment';
import { presetConfig } from '../src/sat/presets';
import { recordSchemas, runSummarySchema } from '../src/sat/records';

describe('record schemas', () => {
  it('accept what the stage loop writes, and name the first wrong value by its path', async () => {
    const exp = createTabularExperiment(presetConfig('climbing', { stages: 1, batch: 4, seed: 3 }));
    const [rec] = await runStages(exp, 1);
    const { stage } = recordSchemas(exp.cfg.agents);
    expect(firstProblem(stage, rec)).toBeUndefined();
    const edited = (edit: (r: any) => void): unknown => {
      const r = structuredClone(rec) as any;
      edit(r);
      return r;
    };
    expect(firstProblem(stage, edited((r) => delete r.certificate.gamma.lower))).toBe('certificate.gamma.lower is missing, expected a number');
    expect(firstProblem(stage, edited((r) => (r.steps[1].cert.range = [0])))).toBe('steps[1].cert.range is a list of 1, expected a list of 2');
    expect(firstProblem(stage, edited((r) => (r.steps[0].agent = 7)))).toBe(`steps[0].agent names agent 7, not one of 0..${exp.cfg.agents - 1}`);
    expect(firstProblem(stage, edited((r) => (r.steps[0].kl = [1])))).toBe('steps[0].kl is not an array of doubles (it is a list of 1)');
    expect(firstProblem(stage, edited((r) => (r.metrics = { ...r.metrics, 'x/y': 'high' })))).toBe('metrics: metric "x/y" is neither a number nor a list of numbers');
    expect(firstProblem(stage, edited((r) => (r.certificate.form = 'other')))).toBe('certificate.form is the text "other", expected "episodic" or "gamma"');
    // NaN and infinities are numbers a record holds.
    expect(firstProblem(stage, edited((r) => (r.jAfter = NaN)))).toBeUndefined();
    expect(firstProblem(stage, edited((r) => (r.held = undefined)))).toBeUndefined();
    expect(firstProblem(runSummarySchema, { config: exp.cfg, j0: 1, stages: [rec!.metrics] })).toBeUndefined();
  });
});

describe('payload schemas', () => {
  it('name the field a checkpoint entry or a step fails at', () => {
    const h = 'ab'.repeat(32);
    expect(failedField(seatCheckpointSchema, { agent: 0, name: 'a', hash: h })).toBeUndefined();
    expect(failedField(seatCheckpointSchema, { agent: 0, name: 'a', hash: h, quant: 'q2' })).toBe('quant');
    expect(failedField(seatCheckpointSchema, { agent: -1, name: 'a', hash: h })).toBe('agent');
    expect(failedField(seatCheckpointSchema, [])).toBe('agent');
    expect(failedField(seatCheckpointSchema, 3)).toBe('');
    expect(failedField(stepRefSchema, { stage: 1, step: 2 })).toEqual({ unknown: 'step' });
    expect(seatOnnx({ file: 'onnx/model.onnx', mode: 'frozen' })).toEqual({ file: 'onnx/model.onnx', mode: 'frozen' });
    expect(seatOnnx({ file: '../model.onnx', mode: 'frozen' })).toBeUndefined();
    expect(seatOnnx({ file: 'model.onnx', mode: 'frozen', x: 1 })).toBeUndefined();
  });
});
