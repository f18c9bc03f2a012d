/**
 * Loops over whole parameter vectors, as plain functions. Async code (an update, a Lanczos run)
 * calls these instead of looping inline: an engine optimises a hot function once, while a hot
 * loop in an async function's body is compiled anew each time the function resumes after an
 * await (on-stack replacement), which kept V8's compiler threads busy every stage in the page; so
 * is a callback made anew on every call (`xs.map((x) => x / n)`), whose optimised code is dropped.
 */

/** Σ aᵢ bᵢ, summed in index order. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** Σ xᵢ², summed in index order. */
export function sumOfSquares(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
  return s;
}

/** out = x + a·y, elementwise (`out` may be an f32 array: each sum rounds once, on the store). */
export function addScaled(out: { [i: number]: number; readonly length: number }, x: ArrayLike<number>, a: number, y: ArrayLike<number>): void {
  for (let i = 0; i < out.length; i++) out[i] = x[i]! + a * y[i]!;
}

/** out = a + f·(b − a), elementwise: the point a fraction f of the way from a to b. */
export function lerp(out: { [i: number]: number; readonly length: number }, a: ArrayLike<number>, f: number, b: ArrayLike<number>): void {
  for (let i = 0; i < out.length; i++) out[i] = a[i]! + f * (b[i]! - a[i]!);
}

/** A new array x / d, elementwise. */
export function divided(x: Float64Array, d: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = x[i]! / d;
  return out;
}
