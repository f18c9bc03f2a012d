/**
 * `npm run pretrain` — train a tiny language model from scratch on a task's generated data,
 * quantize it, measure held-out accuracy, and write it to the model zoo:
 *
 *   npm run pretrain -- --task arithmetic --size S [--level 2] [--minutes 20] [--steps N]
 *                       [--seed 1] [--batch 32] [--lr 3e-3] [--quant q8|q4|f32] [--out public/models]
 *                       [--workers 2]
 *
 * Writes <out>/<task>-<size>.safetensors and <out>/<task>-<size>.json (the card alone). `--workers
 * W` (default min(2, cores)) trains data-parallel on W threads (src/train/parallel.ts); 1 is the
 * single-thread loop. Bad flags exit with status 2, naming the flag (flags.ts).
 *
 * Not here: the training maths (src/train/pretrain.ts) or the worker pool (src/train/parallel.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SatError } from '../core/errors';
import { Rng } from '../core/rng';
import { makeCard, cardToJson } from '../model/card';
import { MODEL_PRESETS, type ModelSize, paramCount } from '../model/config';
import { SEAT_QUANTS, type QuantKind } from '../model/quant';
import { cpuBackend } from '../backend/cpu';
import { Model } from '../model/model';
import { initWeights, quantizeWeights, saveModel } from '../model/weights';
import { isLlmTaskName, LLM_TASK_NAMES, makeLlmTask } from '../tasks/llm/index';
import { defaultWorkers, pretrainParallel } from '../train/parallel';
import { heldOutAccuracy, pretrain, ZOO_EVAL_COUNT, type PretrainOptions } from '../train/pretrain';
import { type FlagSpec, readFlags } from './flags';

const USAGE = `Usage: npm run pretrain -- --task ${LLM_TASK_NAMES.join('|')} --size S|M|L [--minutes 20] [--steps N] [--level L] [--seed S] [--batch B] [--lr LR] [--quant q8|q4|f32] [--out DIR] [--eval N] [--workers W (default ${defaultWorkers()}; 1 = single thread)]`;

interface Args {
  task: string;
  size: string;
  level?: number;
  minutes: number;
  steps: number;
  seed: number;
  batch: number;
  lr: number;
  quant: string;
  out: string;
  evalCount: number;
  workers: number;
}

/** Every flag of `npm run pretrain`, for node:util's parseArgs (read in order by flags.ts). */
const FLAGS = {
  task: { type: 'string' }, size: { type: 'string' }, level: { type: 'string' }, minutes: { type: 'string' }, steps: { type: 'string' },
  seed: { type: 'string' }, batch: { type: 'string' }, lr: { type: 'string' }, quant: { type: 'string' }, out: { type: 'string' },
  eval: { type: 'string' }, workers: { type: 'string' }, help: { type: 'boolean', short: 'h' },
} as const satisfies FlagSpec;

function parse(argv: string[]): Args {
  const a: Args = { task: 'arithmetic', size: 'S', minutes: 20, steps: 1e9, seed: 1, batch: 32, lr: 3e-3, quant: 'q8', out: 'public/models', evalCount: ZOO_EVAL_COUNT, workers: defaultWorkers() };
  const num = (flag: string, v: string, min: number, max: number, int = false): number => {
    const x = Number(v);
    if (v.trim() === '' || !Number.isFinite(x) || x < min || x > max || (int && !Number.isInteger(x))) {
      throw new SatError('usage', `${flag} must be ${int ? 'an integer' : 'a number'} in [${min}, ${max}], got ${v === '' ? '""' : v}`);
    }
    return x;
  };
  // An unknown flag's (or stray word's) message carries the usage line, as it always did.
  const fail = (m: string) => new SatError('usage', /^(Unknown flag|Unexpected argument) /.test(m) ? `${m}. ${USAGE}` : m);
  for (const { name, flag: f, value } of readFlags(argv, FLAGS, fail)) {
    // readFlags has checked that a value flag has its value.
    const v = value!;
    switch (name as keyof typeof FLAGS) {
      case 'help':
        console.log(USAGE);
        process.exit(0);
      case 'task': a.task = v; break;
      case 'size': a.size = v; break;
      case 'level': a.level = num(f, v, 1, 4, true); break;
      case 'minutes': a.minutes = num(f, v, 0.01, 600); break;
      case 'steps': a.steps = num(f, v, 1, 1e9, true); break;
      case 'seed': a.seed = num(f, v, 0, 4294967295, true); break;
      case 'batch': a.batch = num(f, v, 1, 4096, true); break;
      case 'lr': a.lr = num(f, v, 1e-6, 1); break;
      case 'quant': a.quant = v; break;
      case 'out': a.out = v; break;
      case 'eval': a.evalCount = num(f, v, 1, 100000, true); break;
      case 'workers': a.workers = num(f, v, 1, 64, true); break;
    }
  }
  if (!isLlmTaskName(a.task)) throw new SatError('usage', `--task must be one of ${LLM_TASK_NAMES.join(', ')}, got "${a.task}"`);
  if (!(a.size in MODEL_PRESETS)) throw new SatError('usage', `--size must be one of ${Object.keys(MODEL_PRESETS).join(', ')}, got "${a.size}"`);
  if (!(SEAT_QUANTS as readonly string[]).includes(a.quant)) throw new SatError('usage', `--quant must be ${SEAT_QUANTS.join(', ')}, got "${a.quant}"`);
  return a;
}

async function main(): Promise<void> {
  const a = parse(process.argv.slice(2));
  const task = makeLlmTask(a.task as 'arithmetic', { seed: a.seed, level: a.level });
  const cfg = MODEL_PRESETS[a.size as ModelSize];
  const name = `${a.task}-${a.size}`;
  console.log(`pretraining ${name}: ${paramCount(cfg).toLocaleString('en')} parameters (d ${cfg.d}, ${cfg.layers} layers, ${cfg.heads} heads, hidden ${cfg.hidden}), task ${task.name} level ${task.level}, budget ${a.minutes} min / ${a.steps} steps, ${a.workers} worker${a.workers === 1 ? ' (single thread)' : 's (data parallel)'}`);
  const model = new Model(cpuBackend, cfg, initWeights(cfg, new Rng(a.seed, [0x696e])), { trainable: 'full' });
  const opts: PretrainOptions = {
    seed: a.seed, batch: a.batch, lr: a.lr, weightDecay: 0.01, steps: a.steps, seconds: a.minutes * 60, every: 100,
    onProgress: (p) => {
      const line = `step ${String(p.step).padStart(6)}  loss ${p.loss.toFixed(4)}  ${Math.round(p.tokensPerSecond).toLocaleString('en')} tok/s  ${p.elapsed.toFixed(0)} s  ${(100 * p.done).toFixed(1)} %`;
      if (process.stdout.isTTY) process.stdout.write(`\r${line}\x1b[K`);
      else console.log(line);
    },
  };
  const t0 = Date.now();
  const run = a.workers === 1 ? await pretrain(model, task, opts) : await pretrainParallel(model, task, opts, a.workers);
  const wallSeconds = (Date.now() - t0) / 1000;
  if (process.stdout.isTTY) process.stdout.write('\n');
  const f32 = await model.exportWeights();
  const weights = quantizeWeights(cfg, f32, a.quant as QuantKind);
  const quantModel = new Model(cpuBackend, cfg, weights, { trainable: 'none' });
  const accF32 = (await heldOutAccuracy(model, task, a.evalCount)).accuracy;
  const evalQ = await heldOutAccuracy(quantModel, task, a.evalCount);
  console.log(`trained ${run.steps} steps in ${wallSeconds.toFixed(1)} s wall time on ${a.workers} worker${a.workers === 1 ? '' : 's'} (${(run.steps / Math.max(1e-3, wallSeconds)).toFixed(1)} steps/s), final loss ${run.finalLoss.toFixed(4)}; held-out accuracy (greedy, ${a.evalCount} problems): f32 ${(100 * accF32).toFixed(1)} %, ${a.quant} ${(100 * evalQ.accuracy).toFixed(1)} %`);
  for (const e of evalQ.examples) console.log(`  ${e.prompt}${e.answer}  ${e.correct ? '✓' : '✗'}`);
  const card = makeCard(cfg, {
    name, task: `${task.name} level ${task.level}`, dataSeed: a.seed, heldOutAccuracy: evalQ.accuracy,
    pretrainSeconds: Math.round(wallSeconds), pretrainWorkers: a.workers, quant: a.quant as QuantKind,
  });
  mkdirSync(a.out, { recursive: true });
  writeFileSync(join(a.out, `${name}.safetensors`), saveModel(cfg, weights, card));
  writeFileSync(join(a.out, `${name}.json`), cardToJson(card) + '\n');
  console.log(`wrote ${join(a.out, `${name}.safetensors`)} and ${name}.json`);
}

main().catch((e: unknown) => {
  if (e instanceof SatError) {
    console.error(`error: ${e.message}`);
    // 1: a worker thread failed while training; 2: anything else we can name (bad flags first).
    process.exit(e.code === 'worker' ? 1 : 2);
  }
  throw e;
});
