/**
 * Pretraining: the corpus is in the protocols' context format, a few steps of next-token training
 * lower the loss, and `npm run pretrain` (a seconds-long run) writes a model file and a card that
 * load back with matching contents. The shipped models' own accuracy is checked in zoo.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { cardFromJson } from '../src/model/card';
import { modelConfig } from '../src/model/config';
import { AGENT_TOKENS, BOS, EOS, SEP, tokenizer, vocabSize } from '../src/model/tokenizer';
import { Transformer } from '../src/model/transformer';
import { initWeights, loadModel } from '../src/model/weights';
import { pretrainExample } from '../src/tasks/llm/corpus';
import { arithmetic } from '../src/tasks/llm/index';
import { crossEntropyStep } from '../src/train/pretrain';

describe('pretraining', () => {
  const task = arithmetic({ seed: 1, level: 2 });

  it('examples use the protocols\' context format and the loss starts at the answer', () => {
    const rng = new Rng(3);
    let chains = 0;
    for (let i = 0; i < 200; i++) {
      const ex = pretrainExample(task, rng.fork(i));
      const t = Array.from(ex.tokens);
      expect(t[0]).toBe(BOS);
      expect(t.at(-1)).toBe(EOS);
      expect(AGENT_TOKENS).toContain(t[ex.lossFrom - 1]);
      if (t.includes(SEP)) {
        chains++;
        // agent j speaks after agents 0..j−1, each message closed by <sep>
        const markers = t.filter((x) => AGENT_TOKENS.includes(x));
        expect(markers).toEqual(AGENT_TOKENS.slice(0, markers.length));
      }
      const answer = tokenizer.decode(t.slice(ex.lossFrom, -1));
      expect(answer).toMatch(/^-?\d+$/);
    }
    expect(chains).toBeGreaterThan(20);
  });

  it('next-token training lowers the loss on the answers', () => {
    const cfg = modelConfig({ vocab: vocabSize, d: 32, layers: 1, heads: 2, hidden: 64, maxSeq: 64 });
    const model = new Transformer(cfg, initWeights(cfg, new Rng(2)), { trainable: 'full' });
    const rng = new Rng(4);
    const batch = () => Array.from({ length: 16 }, (_, b) => pretrainExample(task, rng.fork(b + Math.floor(rng.uniform() * 1e6))));
    const first = crossEntropyStep(model, batch(), 3e-3, 0).loss;
    let last = first;
    for (let s = 0; s < 150; s++) last = crossEntropyStep(model, batch(), 3e-3, 0).loss;
    console.log(`[pretrain] loss ${first.toFixed(3)} → ${last.toFixed(3)} after 150 steps`);
    expect(last).toBeLessThan(first * 0.6);
  });

  it('npm run pretrain writes a loadable model and its card (a seconds-long run)', () => {
    const out = mkdtempSync(join(tmpdir(), 'sat-pretrain-'));
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/pretrain.ts', '--task', 'countdown', '--size', 'S', '--level', '1', '--steps', '20', '--eval', '16', '--out', out], { encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/held-out accuracy \(greedy, 16 problems\)/);
    const model = loadModel(new Uint8Array(readFileSync(join(out, 'countdown-S.safetensors'))));
    const card = cardFromJson(readFileSync(join(out, 'countdown-S.json'), 'utf8'));
    expect(model.card).toEqual(card);
    expect(card.quant).toBe('q8');
    expect(card.task).toBe('countdown level 1');
    const bad = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/pretrain.ts', '--size', 'XL'], { encoding: 'utf8', timeout: 60_000 });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--size must be one of S, M, L, got "XL"/);
  });
});
