/**
 * Vitest: unit tests run in Node; each file states the seed it fixes. tests/setup/global.ts runs
 * once before any test file: it makes sure Chromium (the browser test's browser, and the GPU
 * tests' SwiftShader adapter) is installed, or stops the run with the command to run.
 *
 * Two projects: `slow` is the files in SLOW below, `fast` every other Node test file. `npm test`
 * runs both; `npm run test:fast` runs `fast` alone, the tier that checks a small change in about a
 * minute.
 */
import { defineConfig } from 'vitest/config';

/**
 * The slow tier (globs). A file belongs here when it runs whole experiments, stages or models,
 * spawns the CLI or python3, starts worker threads, a browser or onnxruntime-web, needs a GPU
 * adapter, fuzzes, or checks kernels at full size; every other Node test file is in the fast tier.
 */
const SLOW = [
  // a browser, or a WebGPU adapter (SwiftShader on a machine without a GPU)
  'tests/e2e/**',
  'tests/webgpu/**',
  // whole experiments, stages or sessions
  'tests/autosave.test.ts',
  'tests/certificate.test.ts',
  'tests/certificate-lm.test.ts',
  'tests/claims.test.ts',
  'tests/deltaSweep.test.ts',
  'tests/formulas.test.ts',
  'tests/fuzz.test.ts',
  'tests/hf-context.test.ts',
  'tests/hostile-session.test.ts',
  'tests/inspect.test.ts',
  'tests/lessons.test.ts',
  'tests/lmswap.test.ts',
  'tests/lmswap-onnx.test.ts',
  'tests/mixedTeam.test.ts',
  'tests/orders-lm.test.ts',
  'tests/pretrain.test.ts',
  'tests/recovery.test.ts',
  'tests/sat.test.ts',
  'tests/savefile.test.ts',
  'tests/session.test.ts',
  'tests/swap.test.ts',
  'tests/worksheet.test.ts',
  // the CLI or python3 as a child process
  'tests/bridge-reward.test.ts',
  'tests/bridge-chain.test.ts',
  'tests/cli.test.ts',
  'tests/hf-cli.test.ts',
  'tests/hostile-cli.test.ts',
  'tests/onnx-cli.test.ts',
  // worker threads
  'tests/hfpage.test.ts',
  'tests/hostile-budget.test.ts',
  'tests/onnx-page.test.ts',
  'tests/onnx-worker.test.ts',
  'tests/threads.test.ts',
  'tests/workers.test.ts',
  // onnxruntime-web
  'tests/bench-hf.test.ts',
  'tests/hf-onnx.test.ts',
  'tests/onnx.test.ts',
  'tests/onnx-frozen.test.ts',
  'tests/onnx-seat.test.ts',
  // whole models: finite differences over every parameter, checkpoint folders, pretraining
  'tests/hf.test.ts',
  'tests/model.test.ts',
  'tests/zoo.test.ts',
  // fuzzing campaigns and real-size hostile inputs
  'tests/hostile.test.ts',
  'tests/hostile-fuzz.test.ts',
  // kernels at full size, and the allocator's random sequences (small-shape kernel tests:
  // tests/backend-cpu.test.ts, tests/objective.test.ts)
  'tests/resident.test.ts',
  'tests/simd.test.ts',
];

export default defineConfig({
  test: {
    environment: 'node',
    globalSetup: ['tests/setup/global.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    projects: [
      { extends: true, test: { name: 'fast', include: ['tests/**/*.test.ts'], exclude: SLOW } },
      { extends: true, test: { name: 'slow', include: SLOW.map((g) => (g.endsWith('/**') ? `${g}/*.test.ts` : g)) } },
    ],
  },
});
