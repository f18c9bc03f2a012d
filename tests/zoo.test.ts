/**
 * The shipped model zoo (public/models): every task has an S and an M model and arithmetic an L;
 * each file loads, its card agrees with its name and config, pretraining fit the 30-minute budget,
 * and re-measuring held-out accuracy (greedy, the same problems `npm run pretrain` used) gives
 * exactly the accuracy on the card (the file's weights as stored, in a `Model` on the f32 CPU
 * backend, trainable 'none').
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cpuBackend } from '../src/backend/cpu';
import { cardFromJson } from '../src/model/card';
import { paramCount } from '../src/model/config';
import { Model } from '../src/model/model';
import { loadModel } from '../src/model/weights';
import { makeLlmTask, type LlmTaskName } from '../src/tasks/llm/index';
import { heldOutAccuracy, ZOO_EVAL_COUNT } from '../src/train/pretrain';

const DIR = 'public/models';
const files = readdirSync(DIR).filter((f) => f.endsWith('.safetensors')).sort();

describe('shipped models', () => {
  it('the zoo has S and M for every task and L for arithmetic', () => {
    for (const name of ['arithmetic-S', 'arithmetic-M', 'arithmetic-L', 'countdown-S', 'countdown-M']) expect(files).toContain(`${name}.safetensors`);
  });

  for (const file of files) {
    it(`${file}: card, budget and held-out accuracy as recorded`, async () => {
      const name = file.replace('.safetensors', '');
      const m = loadModel(new Uint8Array(readFileSync(join(DIR, file))));
      expect(m.card.name).toBe(name);
      expect(cardFromJson(readFileSync(join(DIR, `${name}.json`), 'utf8'))).toEqual(m.card);
      expect(m.card.parameters).toBe(paramCount(m.cfg));
      expect(m.card.pretrainSeconds).toBeLessThanOrEqual(30 * 60);
      const [taskName, , level] = m.card.task.split(' ');
      const task = makeLlmTask(taskName as LlmTaskName, { seed: m.card.dataSeed, level: Number(level) });
      const acc = (await heldOutAccuracy(new Model(cpuBackend, m.cfg, m.weights, { trainable: 'none' }), task, ZOO_EVAL_COUNT)).accuracy;
      console.log(`[zoo] ${name}: ${m.card.parameters.toLocaleString('en')} parameters, ${m.card.quant}, pretrained ${m.card.pretrainSeconds} s, held-out ${(100 * acc).toFixed(1)} % (card ${(100 * m.card.heldOutAccuracy).toFixed(1)} %)`);
      expect(acc).toBe(m.card.heldOutAccuracy);
    });
  }
});
