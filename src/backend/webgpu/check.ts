/**
 * Argument checks shared by the WebGPU wrappers: sizes must be non-negative integers and every
 * tensor long enough for the shape it is given (a short buffer on the GPU would not throw, it
 * would read zeros or drop writes). Messages name the op, the tensor and the sizes, as the CPU
 * backend's check.ts does.
 *
 * Not here: value checks (targets in range, finiteness): a kernel cannot throw; the host-side
 * CPU twin is where such bugs are caught.
 */
import type { GpuTensor } from './kernel';

/** Throws a RangeError unless each named tensor holds at least `n` elements. */
export function needLen(op: string, tensors: Record<string, GpuTensor | null>, n: number): void {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${op}: sizes must be non-negative integers (got a product of ${n})`);
  for (const [name, t] of Object.entries(tensors)) {
    if (t !== null && t.length < n) throw new RangeError(`${op}: ${name} has ${t.length} elements, the shape needs ${n}`);
  }
}

/** Throws a RangeError unless every size is a non-negative integer. */
export function sizes(op: string, dims: Record<string, number>): void {
  for (const [k, v] of Object.entries(dims)) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`${op}: ${k} must be a non-negative integer, got ${v}`);
  }
}

/** Throws a RangeError unless τ is finite and > 0. */
export function checkTemperature(op: string, temperature: number): void {
  if (!(temperature > 0) || !Number.isFinite(temperature)) throw new RangeError(`${op}: temperature must be a finite number > 0, got ${temperature}`);
}
