/**
 * Vite config for the playground page (index.html → src/app/main.tsx), used by `npm run dev`,
 * `npm run build` / `vite preview`, and the browser end-to-end test (tests/e2e), which loads it
 * through Vite's JS API.
 *
 * `base: './'` makes every URL in the built page relative, so `dist/` works from any static host
 * or sub-folder (GitHub Pages, a USB stick, `file://` behind a tiny server).
 *
 * Headers: both servers (`npm run dev`, `vite preview`) send Cross-Origin-Opener-Policy: same-origin
 * and Cross-Origin-Embedder-Policy: require-corp, which make the page cross-origin isolated — the
 * condition for SharedArrayBuffer, hence for the CPU backend's threads (src/backend/cpu/threads.ts).
 * Everything the page loads is same-origin, so require-corp blocks nothing. A static host must send
 * the same two headers for threads (docs/performance.md "Threads"); without them the page works
 * as before on one thread per agent and says so in the console and on the agents' backend line.
 *
 * Not here: the unit-test setup (vitest.config.ts) — Vitest ignores this file.
 */
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/** Cross-origin isolation (header): SharedArrayBuffer, so the CPU kernels' threads. */
const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default defineConfig({
  base: './',
  plugins: [react()],
  // Workers are ES modules, so a worker's dynamic imports become chunks of their own: the input
  // check worker (src/workers/input.worker.ts) loads only the code of the one job it runs.
  worker: { format: 'es' },
  server: { headers: ISOLATION_HEADERS },
  preview: { headers: ISOLATION_HEADERS },
  build: {
    outDir: 'dist',
    target: 'es2022',
    sourcemap: true,
    // The page's main chunk holds react-dom, the store, the stage loop and the table games the
    // main thread runs; the charts (recharts), an imported run's view, KaTeX, the Claims view and
    // the real-run YAML are chunks of their own, loaded as the page starts or on first use
    // (tests/e2e/firstscreen.test.ts holds the main chunk to 500 kB). The agents' models and
    // kernels are the worker chunk, the largest by far: warn only past that.
    chunkSizeWarningLimit: 1400,
  },
});
