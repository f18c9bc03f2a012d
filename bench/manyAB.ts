/**
 * `npx tsx bench/manyAB.ts [f32|q8|q4] [exact|int8] [prompts]`: decoding at SmolLM-135M's shape
 * (a random BF16 checkpoint written once to /tmp/sat-bench-many-135m by tests/helpers/hfCheckpoint.ts)
 * with and without the CPU backend's matmulForwardMany — one job for a layer's q, k, v and one for
 * its gate and up, against one product (one fork-join) per weight — two models on the same weights
 * in one process, six timed greedy calls each (16-token prompts, 16 new tokens), alternated. The two
 * give the same tokens bit for bit (tests/model.test.ts); this prints their speeds and ratio.
 *
 * Not here: the peers (bench/hf.ts).
 */
import { existsSync } from 'node:fs';
import { cpuBackend } from '../src/backend/cpu';
import { cpuThreadsReady } from '../src/backend/cpu/threads';
import { openHfFolder } from '../src/cli/hfSeat';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { Model } from '../src/model/model';
import { hfCheckpoint, writeHfFolder } from '../tests/helpers/hfCheckpoint';
import { median } from './measure';

const dir = '/tmp/sat-bench-many-135m';
if (!existsSync(`${dir}/config.json`)) {
  writeHfFolder(dir, hfCheckpoint({ vocab: 49152, d: 576, layers: 30, heads: 9, kvHeads: 3, hidden: 1536, tied: true, dtype: 'BF16', maxPositions: 2048 }).files);
}
const quant = (process.argv[2] ?? 'f32') as 'f32' | 'q8' | 'q4';
const activations = (process.argv[3] ?? 'exact') as 'exact' | 'int8';
const S = Number(process.argv[4] ?? 1);
const N = 16;
await cpuThreadsReady(2, 10_000);
const folder = await openHfFolder(dir);
const m = await loadHfCheckpoint(folder.files, { quant, maxSeq: 128 });
await folder.close();
const { matmulForwardMany: _many, ...rest } = cpuBackend;
const fused = new Model(cpuBackend, m.cfg, m.weights, { trainable: 'none', activations });
const single = new Model({ ...rest, name: 'cpu, one product per weight' }, m.cfg, m.weights, { trainable: 'none', activations });
const prompts = Array.from({ length: S }, (_, s) => Int32Array.from({ length: 16 }, (_, i) => (i * 7919 + s * 31) % 49152));
const run = async (model: Model): Promise<number> => {
  const t = performance.now();
  await model.generate(prompts, { maxNew: N, temperature: 0, topK: 0, seed: 1, stream: 0, stop: -1 });
  return performance.now() - t;
};
await run(fused);
await run(single);
const a: number[] = [], b: number[] = [];
for (let i = 0; i < 6; i++) {
  a.push(await run(fused));
  b.push(await run(single));
}
const tps = (ms: number): string => ((S * N) / ms * 1000).toFixed(1);
console.log(`${quant} ${activations}, ${S} prompt${S > 1 ? 's' : ''}: one job ${tps(median(a))} tokens/s, one product per weight ${tps(median(b))}, ratio ${(median(b) / median(a)).toFixed(3)}; pairs ${a.map((x, i) => (b[i]! / x).toFixed(2)).join(' ')}`);
