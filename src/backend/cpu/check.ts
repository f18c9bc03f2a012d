/**
 * Argument checks shared by the CPU kernels: a buffer too short for the shape it is given is a
 * caller bug, and it is cheaper to say so (RangeError naming the op, the buffer and the sizes) than
 * to read `undefined` as NaN deep inside a loop.
 *
 * Not here: value checks (finiteness) — kernels propagate NaN like any arithmetic.
 */

/** Throws a RangeError unless `arr` holds at least `n` elements. */
export function need(op: string, name: string, arr: ArrayLike<number>, n: number): void {
  if (arr.length < n) {
    throw new RangeError(`${op}: ${name} has ${arr.length} elements, the shape needs ${n}`);
  }
}

/** Throws a RangeError unless every size is a non-negative integer. */
export function sizes(op: string, dims: Record<string, number>): void {
  for (const [k, v] of Object.entries(dims)) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`${op}: ${k} must be a non-negative integer, got ${v}`);
  }
}
