/**
 * A browser worker running relaxedCheck (./relaxedCheck.ts) on the seed it is sent, posting the
 * result back: tests/e2e/relaxed.test.ts bundles it and starts it in a cross-origin-isolated page,
 * so the CPU backend loads its threads and, where the browser has it, the relaxed-SIMD build.
 */
import { relaxedCheck } from './relaxedCheck';

self.onmessage = async (e: MessageEvent<number>) => {
  try {
    self.postMessage(await relaxedCheck(e.data));
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? `${err.message}\n${err.stack}` : String(err) });
  }
};
