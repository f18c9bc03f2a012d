/**
 * Vite config for the playground page (index.html → src/app/main.tsx), used by `npm run dev`,
 * `npm run build` / `vite preview`, and the browser end-to-end test (tests/e2e), which loads it
 * through Vite's JS API.
 *
 * `base: './'` makes every URL in the built page relative, so `dist/` works from any static host
 * or sub-folder (GitHub Pages, a USB stick, `file://` behind a tiny server).
 *
 * Not here: the unit-test setup (vitest.config.ts) — Vitest ignores this file.
 */
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  plugins: [react()],
  build: {
    outDir: 'dist',
    target: 'es2022',
    sourcemap: true,
    // The page's one chunk is ~950 kB (285 kB gzipped): recharts and react-dom are about two thirds
    // of it, the SAT core the main thread runs (stage loop, environments, certificate) most of the
    // rest. The agents' models and kernels are in the worker chunk. Warn only past that.
    chunkSizeWarningLimit: 1100,
  },
});
