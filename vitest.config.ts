/**
 * Vitest: unit tests run in Node; each file states the seed it fixes. tests/setup/global.ts runs
 * once before any test file: it makes sure Chromium (the browser test's browser, and the GPU
 * tests' SwiftShader adapter) is installed, or stops the run with the command to run.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    environment: 'node',
    globalSetup: ['tests/setup/global.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
