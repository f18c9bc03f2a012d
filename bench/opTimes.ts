/**
 * A timing wrapper around a Backend: every op call is timed in process CPU time (process.cpuUsage
 * before and after, user + system, summed per op name; the CPU backend's ops are single-threaded,
 * and CPU time leaves out the time other processes hold the core on a shared machine), so a
 * whole-model call can be split into its ops — "where does a forward's time go". The wrapped
 * backend is otherwise the same object: same handles, same results. Used by bench/simd.ts (its
 * third table). Timer overhead (~1 µs a call, a few hundred calls per step) is in the totals.
 *
 * Not here: a profiler for the product (src/cli/profile.ts counts model calls per SAT stage phase),
 * the WebGPU backend (its ops are asynchronous: wall time per call would measure the queue, not the op).
 */
import type { Backend, TensorKinds } from '../src/backend/types';

export interface OpTimes<X extends TensorKinds> {
  readonly backend: Backend<X>;
  /** CPU ms and calls per op name since the last reset. */
  readonly totals: Map<string, { ms: number; calls: number }>;
  reset(): void;
}

/** `be` with every function-valued member timed into `totals`. */
export function timeOps<X extends TensorKinds>(be: Backend<X>): OpTimes<X> {
  const totals = new Map<string, { ms: number; calls: number }>();
  const wrapped: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(be)) {
    if (typeof member !== 'function') {
      wrapped[name] = member;
      continue;
    }
    const fn = member as (...args: unknown[]) => unknown;
    wrapped[name] = (...args: unknown[]): unknown => {
      const c0 = process.cpuUsage();
      try {
        return fn(...args);
      } finally {
        const c = process.cpuUsage(c0);
        const e = totals.get(name) ?? { ms: 0, calls: 0 };
        e.ms += (c.user + c.system) / 1000;
        e.calls++;
        totals.set(name, e);
      }
    };
  }
  return { backend: wrapped as unknown as Backend<X>, totals, reset: () => totals.clear() };
}
