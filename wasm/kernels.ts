/**
 * WebAssembly SIMD kernels of the CPU backend, in AssemblyScript (compiled by `npm run build:wasm`,
 * scripts/build-wasm.mjs, into src/backend/cpu/wasm/kernels.wasm.ts; loaded by src/backend/cpu/simdMemory.ts):
 * `gemm` (the matmul gradients, this header), the forward product on weights as stored (linear and
 * panel kernels, below the first rule), then causal attention forward/backward and the row
 * kernels — RMSNorm, SwiGLU, log-softmax, RoPE, residual add, forward and backward — below the second rule, each
 * stating its maths by reference to its TypeScript twin in src/backend/cpu/.
 *
 * One kernel serves both matmul gradients: a "broadcast × row" product
 *   out[r, j] = Σ_k A(r, k) · B[k, j]        r < R, j < J (J a multiple of 4), k < K
 * with A read through strides (element (r, k) at a + 4·(r·ars + k·aks)) and B, out row-major with
 * J columns. The loader (simd.ts) maps the products onto it:
 *   input grad   dinp = dout · W    A = dout (ars OC, aks 1),  B = W  [OC × C]
 *   weight grad  dW   = doutᵀ · inp A = doutᵀ (ars 1, aks OC), B = inp [N × C]
 * so no kernel needs a horizontal (across-lane) sum: every lane is its own output element.
 *
 * Tiling: a 4 × 8 tile of `out` (4 rows of A, two f32x4 columns of B) lives in 8 v128 registers;
 * each step k loads two B vectors and splats four A scalars (v128.load32_splat), i.e. 8 mul + 8 add
 * per 6 loads. 4 × 8 keeps 8 accumulators + 2 B vectors + 1 splat within the 16 xmm registers V8
 * has on x64, so it should not spill (chosen for that; V8's machine code not inspected). Column blocks are the outer loop so a K × 8 strip of B stays in
 * cache while every row tile of A streams past it. Tails: a 4-column block, then single rows.
 *
 * Numerics: each output element is ONE f32 accumulator (one lane) summed in ascending k — not the
 * f64 accumulator of the TypeScript twins (src/backend/cpu/matmul.ts); the results are not bit-equal
 * to them, within the usual f32 bound |Δ| ≤ K·2⁻²⁴·Σ_k |A·B|. The result does not depend on the tile
 * an element falls in (every path is the same ascending f32 sum), so it is deterministic and
 * independent of R and J.
 *
 * Gradients accumulate here (`acc`): the loader copies the gradient in, the kernel adds its sums at
 * the store, the loader copies it back — two memcpys instead of a JS `+=` loop.
 *
 * Memory: no allocator, no GC (`--runtime stub`): the loader owns the linear memory and passes
 * byte offsets above `heapBase()` — its scratch 16-byte aligned, resident tensors 64-byte aligned;
 * a view into one may be only 4-byte aligned, which wasm allows (an alignment is a hint), at some
 * cost in speed.
 *
 * Not here: copies in and out, padding (simd.ts), embedding (a row gather: it stays TypeScript), threads (none in here: src/backend/cpu/threads.ts
 * runs shares of a gemm's rows, of a forward's output columns, or of attention's batch, on other instances of this module over the
 * same shared memory — the shared-memory build, scripts/build-wasm.mjs; a result does not depend on
 * the share an element falls in).
 */

/** First free byte after the module's static data: the loader's buffers start here (16-aligned). */
export function heapBase(): usize {
  return (__heap_base + 15) & ~(<usize>15);
}

/** f32x4 store of s, or of (what is there) + s when accumulating. */
// @ts-ignore: decorator
@inline function put(p: usize, s: v128, acc: bool): void {
  v128.store(p, acc ? f32x4.add(v128.load(p), s) : s);
}

/**
 * The 4 × 8 register tile (header): rows p, p + aR, p + 2aR, p + 3aR of A (step aK bytes per k)
 * against 8 columns of B at bp (step bStep bytes per k), K steps, each lane one f32 sum in
 * ascending k; row i stored at o + i·oRow — its second 4 columns only when `hi`, added to what is
 * there when `acc`. Shared by gemm and the panel kernels (their strides differ, not their sums).
 */
// @ts-ignore: decorator
@inline function tile4x8(p: usize, aR: usize, aK: usize, bp: usize, bStep: usize, K: i32, o: usize, oRow: usize, acc: bool, hi: bool): void {
  let p0 = p;
  let p1 = p0 + aR;
  let p2 = p1 + aR;
  let p3 = p2 + aR;
  let s00 = f32x4.splat(0), s01 = f32x4.splat(0);
  let s10 = f32x4.splat(0), s11 = f32x4.splat(0);
  let s20 = f32x4.splat(0), s21 = f32x4.splat(0);
  let s30 = f32x4.splat(0), s31 = f32x4.splat(0);
  for (let k = 0; k < K; k++) {
    const b0 = v128.load(bp);
    const b1 = v128.load(bp, 16);
    let x = v128.load32_splat(p0);
    s00 = f32x4.add(s00, f32x4.mul(x, b0));
    s01 = f32x4.add(s01, f32x4.mul(x, b1));
    x = v128.load32_splat(p1);
    s10 = f32x4.add(s10, f32x4.mul(x, b0));
    s11 = f32x4.add(s11, f32x4.mul(x, b1));
    x = v128.load32_splat(p2);
    s20 = f32x4.add(s20, f32x4.mul(x, b0));
    s21 = f32x4.add(s21, f32x4.mul(x, b1));
    x = v128.load32_splat(p3);
    s30 = f32x4.add(s30, f32x4.mul(x, b0));
    s31 = f32x4.add(s31, f32x4.mul(x, b1));
    p0 += aK;
    p1 += aK;
    p2 += aK;
    p3 += aK;
    bp += bStep;
  }
  put(o, s00, acc);
  if (hi) put(o + 16, s01, acc);
  put(o + oRow, s10, acc);
  if (hi) put(o + oRow + 16, s11, acc);
  put(o + 2 * oRow, s20, acc);
  if (hi) put(o + 2 * oRow + 16, s21, acc);
  put(o + 3 * oRow, s30, acc);
  if (hi) put(o + 3 * oRow + 16, s31, acc);
}

/** tile4x8 for one row of A. */
// @ts-ignore: decorator
@inline function tile1x8(p: usize, aK: usize, bp: usize, bStep: usize, K: i32, o: usize, acc: bool, hi: bool): void {
  let p0 = p;
  let s0 = f32x4.splat(0), s1 = f32x4.splat(0);
  for (let k = 0; k < K; k++) {
    const x = v128.load32_splat(p0);
    s0 = f32x4.add(s0, f32x4.mul(x, v128.load(bp)));
    s1 = f32x4.add(s1, f32x4.mul(x, v128.load(bp, 16)));
    p0 += aK;
    bp += bStep;
  }
  put(o, s0, acc);
  if (hi) put(o + 16, s1, acc);
}

/**
 * out[R × J] = A · B (header), or out += A · B when `acc` ≠ 0 (the sum is completed in its lane
 * first, then added once: f32(out + Σ)). J must be a multiple of 4.
 */
export function gemm(a: usize, ars: i32, aks: i32, b: usize, J: i32, out: usize, R: i32, K: i32, acc: i32): void {
  const ac = acc != 0;
  const bRow = (<usize>J) << 2; // bytes per row of B and of out
  const aR = (<usize>ars) << 2;
  const aK = (<usize>aks) << 2;
  let j = 0;
  for (; j + 8 <= J; j += 8) {
    const bj = b + ((<usize>j) << 2);
    let r = 0;
    for (; r + 4 <= R; r += 4) tile4x8(a + (<usize>r) * aR, aR, aK, bj, bRow, K, out + ((<usize>r) * (<usize>J) + (<usize>j)) * 4, bRow, ac, true);
    for (; r < R; r++) tile1x8(a + (<usize>r) * aR, aK, bj, bRow, K, out + ((<usize>r) * (<usize>J) + (<usize>j)) * 4, ac, true);
  }
  for (; j < J; j += 4) {
    const bj = b + ((<usize>j) << 2);
    let r = 0;
    for (; r + 4 <= R; r += 4) {
      let p0 = a + (<usize>r) * aR;
      let p1 = p0 + aR;
      let p2 = p1 + aR;
      let p3 = p2 + aR;
      let bp = bj;
      let s0 = f32x4.splat(0), s1 = f32x4.splat(0), s2 = f32x4.splat(0), s3 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const b0 = v128.load(bp);
        s0 = f32x4.add(s0, f32x4.mul(v128.load32_splat(p0), b0));
        s1 = f32x4.add(s1, f32x4.mul(v128.load32_splat(p1), b0));
        s2 = f32x4.add(s2, f32x4.mul(v128.load32_splat(p2), b0));
        s3 = f32x4.add(s3, f32x4.mul(v128.load32_splat(p3), b0));
        p0 += aK;
        p1 += aK;
        p2 += aK;
        p3 += aK;
        bp += bRow;
      }
      const o = out + ((<usize>r) * (<usize>J) + (<usize>j)) * 4;
      put(o, s0, ac);
      put(o + bRow, s1, ac);
      put(o + 2 * bRow, s2, ac);
      put(o + 3 * bRow, s3, ac);
    }
    for (; r < R; r++) {
      let p0 = a + (<usize>r) * aR;
      let bp = bj;
      let s0 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        s0 = f32x4.add(s0, f32x4.mul(v128.load32_splat(p0), v128.load(bp)));
        p0 += aK;
        bp += bRow;
      }
      put(out + ((<usize>r) * (<usize>J) + (<usize>j)) * 4, s0, ac);
    }
  }
}

// ───────────────────────── the forward product on weights as stored ─────────────────────────

/**
 * out[n·OC + o] = Σ_k x[n·C + k] · W[o, k]   for n < N, o0 ≤ o < o1: the forward matmul out = inp · Wᵀ
 * with W read as the model stores it, [OC × C] row-major — f32 (`linF32`), or Q8 / Q4 blocks of 32
 * along C (`linQ8`, `linQ4`; the layouts of src/backend/cpu/quant.ts) dequantized on the fly, each
 * weight q·s exactly as quant.ts dequantRows makes it (an int8 or int4 times an f16 is exact in f32).
 * No copy of Wᵀ is made: for the few rows of a decoding step it would cost as much as the product,
 * and a quantized weight is read at its own size, not as f32.
 *
 * Numerics: lanes are output columns o, as in `gemm`. A 4 × 4 block of W (4 rows o, 4 steps k) is
 * transposed into four column vectors, and each lane is one f32 accumulator summed in ascending k,
 * s = s + x·w — gemm's operations on Wᵀ in the same order, so every element is bit-equal to the gemm
 * path, and a row computed alone equals the same row in any batch.
 *
 * Tiles: 8 rows of W (two 4-lane accumulators per row of x; a last group of 4 rows, one). One row
 * of x (a decoding step of one prompt) takes each transposed or dequantized block in registers as
 * soon as it is made; for f32 with C a multiple of 4, 16 rows of W at a time (four independent sums,
 * so the adds' latency and the weight loads overlap), the same sums in the same order. More rows: per chunk of 16 steps k, the tile's blocks are made once into
 * `cols` (512 bytes of scratch that belong to the calling thread; threads.ts hands each its own)
 * and every row of x, in pairs (four sums in flight, so the adds' latency overlaps), takes them in,
 * its sums kept in `out` between chunks (an f32 stored and loaded back is the same f32). Rows of W
 * past the last multiple of 4: one scalar sum each, in the same order. A caller splits [0, OC) over
 * threads in multiples of 8 rows, so a split changes no element.
 */
// @ts-ignore: decorator
@inline function step4(s: v128, xp: usize, col: usize): v128 {
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp), v128.load(col)));
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 4), v128.load(col, 16)));
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 8), v128.load(col, 32)));
  return f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 12), v128.load(col, 48)));
}

/** The 4 × 4 block of f32 rows p, p + rs, p + 2rs, p + 3rs, transposed: column j (k + j of the 4 rows) at dst + cs·j. */
// @ts-ignore: decorator
@inline function transpose4(p: usize, rs: usize, dst: usize, cs: usize): void {
  const r0 = v128.load(p), r1 = v128.load(p + rs), r2 = v128.load(p + 2 * rs), r3 = v128.load(p + 3 * rs);
  const t0 = v128.shuffle<f32>(r0, r1, 0, 4, 1, 5);
  const t1 = v128.shuffle<f32>(r2, r3, 0, 4, 1, 5);
  const t2 = v128.shuffle<f32>(r0, r1, 2, 6, 3, 7);
  const t3 = v128.shuffle<f32>(r2, r3, 2, 6, 3, 7);
  v128.store(dst, v128.shuffle<f32>(t0, t1, 0, 1, 4, 5));
  v128.store(dst + cs, v128.shuffle<f32>(t0, t1, 2, 3, 6, 7));
  v128.store(dst + 2 * cs, v128.shuffle<f32>(t2, t3, 0, 1, 4, 5));
  v128.store(dst + 3 * cs, v128.shuffle<f32>(t2, t3, 2, 3, 6, 7));
}

/** s plus four steps k of one row of x (xp) against the 4 × 4 f32 block of rows p, p + rs, … (transposed in registers). */
// @ts-ignore: decorator
@inline function rowStep4(s: v128, xp: usize, p: usize, rs: usize): v128 {
  const r0 = v128.load(p), r1 = v128.load(p + rs), r2 = v128.load(p + 2 * rs), r3 = v128.load(p + 3 * rs);
  const t0 = v128.shuffle<f32>(r0, r1, 0, 4, 1, 5);
  const t1 = v128.shuffle<f32>(r2, r3, 0, 4, 1, 5);
  const t2 = v128.shuffle<f32>(r0, r1, 2, 6, 3, 7);
  const t3 = v128.shuffle<f32>(r2, r3, 2, 6, 3, 7);
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp), v128.shuffle<f32>(t0, t1, 0, 1, 4, 5)));
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 4), v128.shuffle<f32>(t0, t1, 2, 3, 6, 7)));
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 8), v128.shuffle<f32>(t2, t3, 0, 1, 4, 5)));
  return f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 12), v128.shuffle<f32>(t2, t3, 2, 3, 6, 7)));
}

/** Stores the sums of a tile: s0 to out row n at column o, s1 (when `hi`) at o + 4. */
// @ts-ignore: decorator
@inline function store8(out: usize, s0: v128, s1: v128, hi: bool): void {
  v128.store(out, s0);
  if (hi) v128.store(out, s1, 16);
}

/**
 * Every row of x takes in a chunk of nq ≤ 4 column blocks of a tile (at cols, and cols + 256 for the
 * second 4 rows when `hi`), steps kb0 / 4 … on: rows in pairs, an odd last row alone; each sum
 * loaded from out (or zero on the `first` chunk), advanced, stored back.
 */
// @ts-ignore: decorator
@inline function chunkRows(x: usize, N: i32, xRow: usize, kb0: usize, nq: usize, cols: usize, out: usize, oRow: usize, first: bool, hi: bool): void {
  const z = f32x4.splat(0);
  for (let n = 0; n < N; n += 2) {
    const two = n + 1 < N;
    const x0 = x + (<usize>n) * xRow + kb0;
    const p0 = out + (<usize>n) * oRow;
    let a0 = first ? z : v128.load(p0), b0 = first || !hi ? z : v128.load(p0, 16);
    if (two) {
      const x1 = x0 + xRow, p1 = p0 + oRow;
      let a1 = first ? z : v128.load(p1), b1 = first || !hi ? z : v128.load(p1, 16);
      for (let m: usize = 0; m < nq; m++) {
        const xm = m << 4, cm = cols + (m << 6);
        a0 = step4(a0, x0 + xm, cm);
        a1 = step4(a1, x1 + xm, cm);
        if (hi) {
          b0 = step4(b0, x0 + xm, cm + 256);
          b1 = step4(b1, x1 + xm, cm + 256);
        }
      }
      store8(p1, a1, b1, hi);
    } else {
      for (let m: usize = 0; m < nq; m++) {
        const xm = m << 4, cm = cols + (m << 6);
        a0 = step4(a0, x0 + xm, cm);
        if (hi) b0 = step4(b0, x0 + xm, cm + 256);
      }
    }
    store8(p0, a0, b0, hi);
  }
}

/**
 * One load per 64-byte line of [p, p + bytes), all independent, their xor stored at dst (so they are
 * not dropped; dst is scratch the caller overwrites or never reads): called at the start of a group
 * of rows of W on the NEXT group's rows, it puts that group's cache misses in flight at once while
 * this group computes — wasm has no prefetch instruction, and the quantized kernels, which compute
 * more per byte than they can hide, otherwise wait on one row's next line after another. (The f32
 * kernel, 4 bytes a weight, keeps enough loads in flight on its own; touching ahead slowed it.)
 */
// @ts-ignore: decorator
@inline function touchLines(p: usize, bytes: usize, dst: usize): void {
  let t = i32x4.splat(0);
  for (let b: usize = 0; b < bytes; b += 64) t = v128.xor(t, v128.load(p + b));
  v128.store(dst, t);
}

/** f32 weights (header): out[n, o] for o in [o0, o1), all n. */
export function linF32(x: usize, N: i32, w: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, cols: usize): void {
  const wRow = (<usize>C) << 2;
  const oRow = (<usize>OC) << 2;
  const c4 = C & ~3;
  let o = o0;
  if (N == 1 && c4 == C) {
    // One row, C a multiple of 4: 16 rows of W at a time, four independent sums in flight.
    for (; o + 16 <= o1; o += 16) {
      const wa = w + (<usize>o) * wRow;
      let a = f32x4.splat(0), b = f32x4.splat(0), c = f32x4.splat(0), d = f32x4.splat(0);
      for (let k = 0; k < c4; k += 4) {
        const kb = (<usize>k) << 2;
        a = rowStep4(a, x + kb, wa + kb, wRow);
        b = rowStep4(b, x + kb, wa + 4 * wRow + kb, wRow);
        c = rowStep4(c, x + kb, wa + 8 * wRow + kb, wRow);
        d = rowStep4(d, x + kb, wa + 12 * wRow + kb, wRow);
      }
      const po = out + ((<usize>o) << 2);
      store8(po, a, b, true);
      store8(po + 32, c, d, true);
    }
  }
  for (; o + 4 <= o1; ) {
    const hi = o + 8 <= o1;
    const wa = w + (<usize>o) * wRow;
    const wb = wa + 4 * wRow;
    const po = out + ((<usize>o) << 2);
    if (N == 1) {
      let a = f32x4.splat(0), b = f32x4.splat(0);
      for (let k = 0; k < c4; k += 4) {
        const kb = (<usize>k) << 2;
        a = rowStep4(a, x + kb, wa + kb, wRow);
        if (hi) b = rowStep4(b, x + kb, wb + kb, wRow);
      }
      store8(po, a, b, hi);
    } else {
      for (let k = 0; k < c4; k += 16) {
        const nq = <usize>min(4, (c4 - k) >> 2);
        const kb = (<usize>k) << 2;
        for (let m: usize = 0; m < nq; m++) {
          transpose4(wa + kb + (m << 4), wRow, cols + (m << 6), 16);
          if (hi) transpose4(wb + kb + (m << 4), wRow, cols + 256 + (m << 6), 16);
        }
        chunkRows(x, N, wRow, kb, nq, cols, po, oRow, k == 0, hi);
      }
    }
    for (let k = c4; k < C; k++) {
      // The last C mod 4 steps: each column built lane by lane, every row's sums from out.
      const kb = (<usize>k) << 2;
      let ca = f32x4.splat(load<f32>(wa + kb));
      ca = f32x4.replace_lane(ca, 1, load<f32>(wa + wRow + kb));
      ca = f32x4.replace_lane(ca, 2, load<f32>(wa + 2 * wRow + kb));
      ca = f32x4.replace_lane(ca, 3, load<f32>(wa + 3 * wRow + kb));
      let cb = f32x4.splat(0);
      if (hi) {
        cb = f32x4.splat(load<f32>(wb + kb));
        cb = f32x4.replace_lane(cb, 1, load<f32>(wb + wRow + kb));
        cb = f32x4.replace_lane(cb, 2, load<f32>(wb + 2 * wRow + kb));
        cb = f32x4.replace_lane(cb, 3, load<f32>(wb + 3 * wRow + kb));
      }
      for (let n = 0; n < N; n++) {
        const p = po + (<usize>n) * oRow;
        const xs = v128.load32_splat(x + (<usize>n) * wRow + kb);
        const first = k == 0;
        store8(p, f32x4.add(first ? f32x4.splat(0) : v128.load(p), f32x4.mul(xs, ca)), f32x4.add(first || !hi ? f32x4.splat(0) : v128.load(p, 16), f32x4.mul(xs, cb)), hi);
      }
    }
    o += hi ? 8 : 4;
  }
  for (; o < o1; o++) {
    const wo = w + (<usize>o) * wRow;
    for (let n = 0; n < N; n++) {
      const xn = x + (<usize>n) * wRow;
      let s: f32 = 0;
      for (let k = 0; k < C; k++) s += load<f32>(xn + ((<usize>k) << 2)) * load<f32>(wo + ((<usize>k) << 2));
      store<f32>(out + (<usize>n) * oRow + ((<usize>o) << 2), s);
    }
  }
}

/** f16 bits → f32, exactly (quant.ts f16ToF32): the bits moved into place, then ·2¹¹² (exact, subnormals included); Inf and NaN kept. */
// @ts-ignore: decorator
@inline function half(h: u32): f32 {
  if ((h & 0x7c00) == 0x7c00) return reinterpret<f32>(((h & 0x8000) << 16) | 0x7f800000 | ((h & 0x3ff) << 13));
  const v = reinterpret<f32>((h & 0x7fff) << 13) * reinterpret<f32>(0x77800000);
  return (h & 0x8000) != 0 ? -v : v;
}

/**
 * The scales of rows o..o+3 at block j as one f32x4 (sc: the u16 scales, nb blocks per row): the
 * four f16 bits gathered into i32 lanes and converted as `half` does, lane-wise — magnitude bits
 * moved into place and ·2¹¹² (exact, subnormals included), Inf/NaN rebuilt, the sign or-ed in.
 */
// @ts-ignore: decorator
@inline function scales4(sc: usize, nb: i32, o: i32, j: i32): v128 {
  const rs = (<usize>nb) << 1;
  const p = sc + (<usize>o) * rs + ((<usize>j) << 1);
  let h = i32x4.splat(<i32>load<u16>(p));
  h = i32x4.replace_lane(h, 1, <i32>load<u16>(p + rs));
  h = i32x4.replace_lane(h, 2, <i32>load<u16>(p + 2 * rs));
  h = i32x4.replace_lane(h, 3, <i32>load<u16>(p + 3 * rs));
  const finite = f32x4.mul(i32x4.shl(v128.and(h, i32x4.splat(0x7fff)), 13), f32x4.splat(reinterpret<f32>(0x77800000)));
  const special = v128.or(i32x4.splat(0x7f800000), i32x4.shl(v128.and(h, i32x4.splat(0x3ff)), 13));
  const isSpecial = i32x4.eq(v128.and(h, i32x4.splat(0x7c00)), i32x4.splat(0x7c00));
  return v128.or(v128.bitselect(special, finite, isSpecial), i32x4.shl(v128.and(h, i32x4.splat(0x8000)), 16));
}

/** The four columns of one 4 × 4 block: byte t of each 32-bit lane (lane i = row i), sign-extended, converted, ·sv; column t at dst + cs·t. */
// @ts-ignore: decorator
@inline function byteCols(v: v128, sv: v128, dst: usize, cs: usize): void {
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(i32x4.shl(v, 24), 24)), sv));
  v128.store(dst + cs, f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(i32x4.shl(v, 16), 24)), sv));
  v128.store(dst + 2 * cs, f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(i32x4.shl(v, 8), 24)), sv));
  v128.store(dst + 3 * cs, f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(v, 24)), sv));
}

/**
 * Sixteen int8 weights (k0..k0+15) of each of four rows r0..r3, times the rows' scales sv, as
 * sixteen column vectors (column k0 + t at dst + cs·t, transpose4's layout): the rows transposed as
 * 32-bit lanes, then byteCols on each.
 */
// @ts-ignore: decorator
@inline function dequant16(r0: v128, r1: v128, r2: v128, r3: v128, sv: v128, dst: usize, cs: usize): void {
  const t0 = v128.shuffle<i32>(r0, r1, 0, 4, 1, 5);
  const t1 = v128.shuffle<i32>(r2, r3, 0, 4, 1, 5);
  const t2 = v128.shuffle<i32>(r0, r1, 2, 6, 3, 7);
  const t3 = v128.shuffle<i32>(r2, r3, 2, 6, 3, 7);
  byteCols(v128.shuffle<i32>(t0, t1, 0, 1, 4, 5), sv, dst, cs);
  byteCols(v128.shuffle<i32>(t0, t1, 2, 3, 6, 7), sv, dst + 4 * cs, cs);
  byteCols(v128.shuffle<i32>(t2, t3, 0, 1, 4, 5), sv, dst + 8 * cs, cs);
  byteCols(v128.shuffle<i32>(t2, t3, 2, 3, 6, 7), sv, dst + 12 * cs, cs);
}

/** s plus four steps k of one row of x (xp) against one 4 × 4 int8 block v (byteCols's layout) times sv, the columns in registers. */
// @ts-ignore: decorator
@inline function rowBytes4(s: v128, xp: usize, v: v128, sv: v128): v128 {
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp), f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(i32x4.shl(v, 24), 24)), sv)));
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 4), f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(i32x4.shl(v, 16), 24)), sv)));
  s = f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 8), f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(i32x4.shl(v, 8), 24)), sv)));
  return f32x4.add(s, f32x4.mul(v128.load32_splat(xp, 12), f32x4.mul(f32x4.convert_i32x4_s(i32x4.shr_s(v, 24)), sv)));
}

/** s plus sixteen steps k of one row of x (xp) against int8 rows r0..r3 (k0..k0+15) times sv: dequant16 with the columns used at once. */
// @ts-ignore: decorator
@inline function rowBytes16(s: v128, xp: usize, r0: v128, r1: v128, r2: v128, r3: v128, sv: v128): v128 {
  const t0 = v128.shuffle<i32>(r0, r1, 0, 4, 1, 5);
  const t1 = v128.shuffle<i32>(r2, r3, 0, 4, 1, 5);
  const t2 = v128.shuffle<i32>(r0, r1, 2, 6, 3, 7);
  const t3 = v128.shuffle<i32>(r2, r3, 2, 6, 3, 7);
  s = rowBytes4(s, xp, v128.shuffle<i32>(t0, t1, 0, 1, 4, 5), sv);
  s = rowBytes4(s, xp + 16, v128.shuffle<i32>(t0, t1, 2, 3, 6, 7), sv);
  s = rowBytes4(s, xp + 32, v128.shuffle<i32>(t2, t3, 0, 1, 4, 5), sv);
  return rowBytes4(s, xp + 48, v128.shuffle<i32>(t2, t3, 2, 3, 6, 7), sv);
}

/**
 * Thirty-two int4 weights of one row (16 bytes at p, low nibble first: quant.ts's Q4 layout) as
 * int8 in k order: bytes k0..k0+15 (`upper` false) or k0+16..k0+31 (true), each nibble − 8.
 */
// @ts-ignore: decorator
@inline function nibbles(p: usize, upper: bool): v128 {
  const b = v128.load(p);
  const lo = v128.and(b, i8x16.splat(15));
  const hi = i8x16.shr_u(b, 4);
  const e = upper
    ? i8x16.shuffle(lo, hi, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)
    : i8x16.shuffle(lo, hi, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  return i8x16.sub(e, i8x16.splat(8));
}

/**
 * The quantized tile loop shared by linQ8 and linQ4 (`bits` 8 or 4), per half block of 16 steps k:
 * one row of x takes the dequantized columns in registers; more rows take them from `cols`, where
 * they are dequantized once (256 bytes per 4 rows of W) — the header's two ways.
 */
// @ts-ignore: decorator
@inline function linQ(bits: i32, x: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, cols: usize): void {
  const xRow = (<usize>C) << 2;
  const oRow = (<usize>OC) << 2;
  const qRow = bits == 8 ? <usize>C : (<usize>C) >> 1;
  const nb = C >> 5;
  let o = o0;
  for (; o + 4 <= o1; ) {
    const hi = o + 8 <= o1;
    if (o + 16 <= OC) touchLines(q + (<usize>(o + 8)) * qRow, 8 * qRow, cols);
    const qa = q + (<usize>o) * qRow;
    const po = out + ((<usize>o) << 2);
    let a = f32x4.splat(0), b = f32x4.splat(0);
    for (let j = 0; j < nb; j++) {
      const sa = scales4(sc, nb, o, j);
      const sb = hi ? scales4(sc, nb, o + 4, j) : sa;
      for (let h = 0; h < 2; h++) {
        const kb = ((<usize>j) << 7) + ((<usize>h) << 6); // byte offset of step 32j + 16h in a row of x
        const pa = bits == 8 ? qa + ((<usize>j) << 5) + ((<usize>h) << 4) : qa + ((<usize>j) << 4);
        const pb = pa + 4 * qRow;
        const up = h != 0;
        if (N == 1) {
          // One row of x: the columns in registers, used at once.
          if (bits == 8) {
            a = rowBytes16(a, x + kb, v128.load(pa), v128.load(pa + qRow), v128.load(pa + 2 * qRow), v128.load(pa + 3 * qRow), sa);
            if (hi) b = rowBytes16(b, x + kb, v128.load(pb), v128.load(pb + qRow), v128.load(pb + 2 * qRow), v128.load(pb + 3 * qRow), sb);
          } else {
            a = rowBytes16(a, x + kb, nibbles(pa, up), nibbles(pa + qRow, up), nibbles(pa + 2 * qRow, up), nibbles(pa + 3 * qRow, up), sa);
            if (hi) b = rowBytes16(b, x + kb, nibbles(pb, up), nibbles(pb + qRow, up), nibbles(pb + 2 * qRow, up), nibbles(pb + 3 * qRow, up), sb);
          }
          continue;
        }
        // More rows: the chunk's columns dequantized once into `cols`, then taken in by every row.
        if (bits == 8) {
          dequant16(v128.load(pa), v128.load(pa + qRow), v128.load(pa + 2 * qRow), v128.load(pa + 3 * qRow), sa, cols, 16);
          if (hi) dequant16(v128.load(pb), v128.load(pb + qRow), v128.load(pb + 2 * qRow), v128.load(pb + 3 * qRow), sb, cols + 256, 16);
        } else {
          dequant16(nibbles(pa, up), nibbles(pa + qRow, up), nibbles(pa + 2 * qRow, up), nibbles(pa + 3 * qRow, up), sa, cols, 16);
          if (hi) dequant16(nibbles(pb, up), nibbles(pb + qRow, up), nibbles(pb + 2 * qRow, up), nibbles(pb + 3 * qRow, up), sb, cols + 256, 16);
        }
        chunkRows(x, N, xRow, kb, 4, cols, po, oRow, j == 0 && h == 0, hi);
      }
    }
    if (N == 1) store8(po, a, b, hi);
    o += hi ? 8 : 4;
  }
  for (; o < o1; o++) {
    for (let n = 0; n < N; n++) {
      const xn = x + (<usize>n) * xRow;
      let s: f32 = 0;
      for (let k = 0; k < C; k++) {
        const sk = half(<u32>load<u16>(sc + (((<usize>o) * (<usize>nb) + (<usize>(k >> 5))) << 1)));
        let v: i32;
        if (bits == 8) v = <i32>load<i8>(q + (<usize>o) * qRow + <usize>k);
        else {
          const by = <i32>load<u8>(q + (<usize>o) * qRow + ((<usize>k) >> 1));
          v = ((k & 1) == 0 ? by & 15 : by >> 4) - 8;
        }
        s += load<f32>(xn + ((<usize>k) << 2)) * (<f32>v * sk);
      }
      store<f32>(out + (<usize>n) * oRow + ((<usize>o) << 2), s);
    }
  }
}

/**
 * The same product for many rows of x (a prefill, a training batch), through packed panels: for each
 * tile of 8 rows of W, its columns over all C steps are packed once into `strip` (C × 8 f32, row k =
 * W[o..o+7, k]: f32 rows transposed, Q8 / Q4 rows dequantized — the calling thread's own, 32·C bytes)
 * and every row of x runs gemm's 4 × 8 register tile against it, so no thread copies the whole of Wᵀ
 * first and each panel stays in cache while the rows stream past it. Same sums in the same order as
 * gemm on Wᵀ (bit-equal to it and to the linear kernels above). A last tile of 4 rows leaves the
 * strip's other 4 columns as they are (their lanes are computed and not stored); rows of W past the
 * last multiple of 4 go to the linear kernel. C must be a multiple of 4 (f32; the quantized layouts
 * have 32), and strip must hold max(32·C, 512) bytes (the linear kernel's scratch too).
 */
// @ts-ignore: decorator
@inline function panelRows(x: usize, N: i32, C: i32, strip: usize, out: usize, oRow: usize, hi: bool): void {
  const xRow = (<usize>C) << 2;
  let r = 0;
  for (; r + 4 <= N; r += 4) tile4x8(x + (<usize>r) * xRow, xRow, 4, strip, 32, C, out + (<usize>r) * oRow, oRow, false, hi);
  for (; r < N; r++) tile1x8(x + (<usize>r) * xRow, 4, strip, 32, C, out + (<usize>r) * oRow, false, hi);
}

/** f32 weights (panel header), C a multiple of 4: out[n, o] for o in [o0, o1), all n. */
export function panelF32(x: usize, N: i32, w: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, strip: usize): void {
  const wRow = (<usize>C) << 2;
  const oRow = (<usize>OC) << 2;
  let o = o0;
  for (; o + 4 <= o1; ) {
    const hi = o + 8 <= o1;
    const wa = w + (<usize>o) * wRow;
    for (let k = 0; k < C; k += 4) {
      const kb = (<usize>k) << 2;
      transpose4(wa + kb, wRow, strip + (kb << 3), 32);
      if (hi) transpose4(wa + 4 * wRow + kb, wRow, strip + (kb << 3) + 16, 32);
    }
    panelRows(x, N, C, strip, out + ((<usize>o) << 2), oRow, hi);
    o += hi ? 8 : 4;
  }
  if (o < o1) linF32(x, N, w, C, out, OC, o, o1, strip);
}

// @ts-ignore: decorator
@inline function panelQ(bits: i32, x: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, strip: usize): void {
  const oRow = (<usize>OC) << 2;
  const qRow = bits == 8 ? <usize>C : (<usize>C) >> 1;
  const nb = C >> 5;
  let o = o0;
  for (; o + 4 <= o1; ) {
    const hi = o + 8 <= o1;
    const qa = q + (<usize>o) * qRow;
    for (let j = 0; j < nb; j++) {
      const sa = scales4(sc, nb, o, j);
      const sb = hi ? scales4(sc, nb, o + 4, j) : sa;
      for (let h = 0; h < 2; h++) {
        const dst = strip + ((<usize>(32 * j + 16 * h)) << 5); // strip row of step 32j + 16h
        const pa = bits == 8 ? qa + ((<usize>j) << 5) + ((<usize>h) << 4) : qa + ((<usize>j) << 4);
        const pb = pa + 4 * qRow;
        const up = h != 0;
        if (bits == 8) {
          dequant16(v128.load(pa), v128.load(pa + qRow), v128.load(pa + 2 * qRow), v128.load(pa + 3 * qRow), sa, dst, 32);
          if (hi) dequant16(v128.load(pb), v128.load(pb + qRow), v128.load(pb + 2 * qRow), v128.load(pb + 3 * qRow), sb, dst + 16, 32);
        } else {
          dequant16(nibbles(pa, up), nibbles(pa + qRow, up), nibbles(pa + 2 * qRow, up), nibbles(pa + 3 * qRow, up), sa, dst, 32);
          if (hi) dequant16(nibbles(pb, up), nibbles(pb + qRow, up), nibbles(pb + 2 * qRow, up), nibbles(pb + 3 * qRow, up), sb, dst + 16, 32);
        }
      }
    }
    panelRows(x, N, C, strip, out + ((<usize>o) << 2), oRow, hi);
    o += hi ? 8 : 4;
  }
  if (o < o1) linQ(bits, x, N, q, sc, C, out, OC, o, o1, strip);
}

/** Q8 weights (panel header): out[n, o] for o in [o0, o1), all n. */
export function panelQ8(x: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, strip: usize): void {
  panelQ(8, x, N, q, sc, C, out, OC, o0, o1, strip);
}

/** Q4 weights (panel header): out[n, o] for o in [o0, o1), all n. */
export function panelQ4(x: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, strip: usize): void {
  panelQ(4, x, N, q, sc, C, out, OC, o0, o1, strip);
}

/**
 * The dense f32 rows [o0, o1) of a Q8 (`bits` 8) or Q4 (4) weight: out[(o − o0)·C + c] = W[o, c],
 * each q·s as quant.ts dequantRows makes it (exact). What the larger forwards (through Wᵀ and the
 * gemm) and the input gradients of a frozen quantized weight run on.
 */
export function dequantRows(out: usize, q: usize, sc: usize, C: i32, o0: i32, o1: i32, bits: i32): void {
  const nb = C >> 5;
  const qRow = bits == 8 ? <usize>C : (<usize>C) >> 1;
  for (let o = o0; o < o1; o++) {
    const qo = q + (<usize>o) * qRow;
    const dst = out + (<usize>(o - o0)) * ((<usize>C) << 2);
    for (let j = 0; j < nb; j++) {
      const sv = f32x4.splat(half(<u32>load<u16>(sc + (((<usize>o) * (<usize>nb) + (<usize>j)) << 1))));
      const d = dst + ((<usize>j) << 7);
      let e0: v128, e1: v128;
      if (bits == 8) {
        e0 = v128.load(qo + ((<usize>j) << 5));
        e1 = v128.load(qo + ((<usize>j) << 5), 16);
      } else {
        e0 = nibbles(qo + ((<usize>j) << 4), false);
        e1 = nibbles(qo + ((<usize>j) << 4), true);
      }
      storeBytes16(e0, sv, d);
      storeBytes16(e1, sv, d + 64);
    }
  }
}

/** Sixteen int8 lanes of e, sign-extended and converted in order, ·sv, stored as 16 f32 at dst. */
// @ts-ignore: decorator
@inline function storeBytes16(e: v128, sv: v128, dst: usize): void {
  const lo = i16x8.extend_low_i8x16_s(e), hi = i16x8.extend_high_i8x16_s(e);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(lo)), sv));
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(lo)), sv), 16);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(hi)), sv), 32);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(hi)), sv), 48);
}

/** Q8 weights (header; q: int8 [OC × C], sc: f16 scales [OC × C/32]): out[n, o] for o in [o0, o1), all n. */
export function linQ8(x: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, cols: usize): void {
  linQ(8, x, N, q, sc, C, out, OC, o0, o1, cols);
}

/** Q4 weights (header; q: packed int4 [OC × C/2], sc: f16 scales [OC × C/32]): out[n, o] for o in [o0, o1), all n. */
export function linQ4(x: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, cols: usize): void {
  linQ(4, x, N, q, sc, C, out, OC, o0, o1, cols);
}

// ───────────────────────── int8 activations ─────────────────────────
// The activation-quantized product (quant.ts matmulForwardQAct, the twin; docs/kernels.md "int8
// activations"): each row of x is quantized per block of 32 steps like a Q8_0 weight, and a block's
// product is an exact integer sum Σ q_w·q_x (i32x4.dot_i16x8_s), scaled once:
//   out[n, o] = Σ_j f32(S_j) · (s_w[o, j] · d_x[n, j])     (f32, ascending j, one lane per output)
// so a block costs about half a vector op per weight instead of the exact kernels' two. Every
// output is that one sequence of f32 operations, whichever N, thread or tile it falls in.

/**
 * Rows of x quantized per block of 32 for linQ8a / linQ4a: d = max|x| / 127, q = nearest-even(x · (1/d))
 * (q = 0 where d = 0), d at dx[n·C/32 + j] (f32), q at xq (64 bytes a block) in the weight layout's
 * order — Q8: k order; Q4 (`q4` ≠ 0): the block's even steps, then its odd ones, as the low and high
 * nibbles of Q4's 16 bytes hold them. As the build's dot products take them: with SIMD alone, q as
 * int16; with relaxed SIMD (relaxedActs), int8 in the form the 8-bit dot product needs.
 */
export function quantActs(x: usize, N: i32, C: i32, xq: usize, dx: usize, q4: i32): void {
  const nb = C >> 5;
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < nb; j++) {
      const b = (<usize>n) * (<usize>nb) + (<usize>j);
      const p = x + (b << 7);
      let m = f32x4.abs(v128.load(p));
      for (let i: usize = 1; i < 8; i++) m = f32x4.max(m, f32x4.abs(v128.load(p + (i << 4))));
      const amax = max(max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1)), max(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)));
      const d: f32 = amax / 127;
      const iv = f32x4.splat(d == 0 ? 0 : <f32>1 / d);
      store<f32>(dx + (b << 2), d);
      const h0 = i16x8.narrow_i32x4_s(qlanes(p, iv), qlanes(p + 16, iv));
      const h1 = i16x8.narrow_i32x4_s(qlanes(p + 32, iv), qlanes(p + 48, iv));
      const h2 = i16x8.narrow_i32x4_s(qlanes(p + 64, iv), qlanes(p + 80, iv));
      const h3 = i16x8.narrow_i32x4_s(qlanes(p + 96, iv), qlanes(p + 112, iv));
      const o = xq + (b << 6);
      if (ASC_FEATURE_RELAXED_SIMD) relaxedActs(o, h0, h1, h2, h3, q4);
      else if (q4 == 0) {
        v128.store(o, h0);
        v128.store(o, h1, 16);
        v128.store(o, h2, 32);
        v128.store(o, h3, 48);
      } else {
        v128.store(o, i16x8.shuffle(h0, h1, 0, 2, 4, 6, 8, 10, 12, 14));
        v128.store(o, i16x8.shuffle(h2, h3, 0, 2, 4, 6, 8, 10, 12, 14), 16);
        v128.store(o, i16x8.shuffle(h0, h1, 1, 3, 5, 7, 9, 11, 13, 15), 32);
        v128.store(o, i16x8.shuffle(h2, h3, 1, 3, 5, 7, 9, 11, 13, 15), 48);
      }
    }
  }
}

/**
 * A quantized block (int16 lanes h0..h3, k order; every value in [−127, 127]) stored for the relaxed
 * 8-bit dot product, i32x4.relaxed_dot_i8x16_i7x16_add_s(a, b, c), whose second operand must lie in
 * [0, 127] (then every engine gives the exact integer sum). Q8: |q| (bytes 0–31, k order), then q's
 * sign as 0 / −1 bytes (32–63): the kernel moves the sign onto the weight, w·q = (±w)·|q|. Q4 (`q4`
 * ≠ 0): q as int8, the even steps then the odd (bytes 0–31), then 8·Σq as four i32 lanes (32–47):
 * the kernel dots q with the raw nibbles n ∈ [0, 15] and takes 8·Σq off, Σ (n − 8)·q.
 */
// @ts-ignore: decorator
@inline function relaxedActs(o: usize, h0: v128, h1: v128, h2: v128, h3: v128, q4: i32): void {
  if (q4 == 0) {
    const a = i8x16.narrow_i16x8_s(h0, h1), b = i8x16.narrow_i16x8_s(h2, h3);
    v128.store(o, i8x16.abs(a));
    v128.store(o, i8x16.abs(b), 16);
    v128.store(o, i8x16.shr_s(a, 7), 32);
    v128.store(o, i8x16.shr_s(b, 7), 48);
  } else {
    v128.store(o, i8x16.narrow_i16x8_s(i16x8.shuffle(h0, h1, 0, 2, 4, 6, 8, 10, 12, 14), i16x8.shuffle(h2, h3, 0, 2, 4, 6, 8, 10, 12, 14)));
    v128.store(o, i8x16.narrow_i16x8_s(i16x8.shuffle(h0, h1, 1, 3, 5, 7, 9, 11, 13, 15), i16x8.shuffle(h2, h3, 1, 3, 5, 7, 9, 11, 13, 15)), 16);
    const one = i16x8.splat(1);
    const t = i32x4.add(i32x4.add(i32x4.dot_i16x8_s(h0, one), i32x4.dot_i16x8_s(h1, one)), i32x4.add(i32x4.dot_i16x8_s(h2, one), i32x4.dot_i16x8_s(h3, one)));
    const u = i32x4.add(t, v128.shuffle<i32>(t, t, 2, 3, 0, 1));
    v128.store(o, i32x4.shl(i32x4.add(u, v128.shuffle<i32>(u, u, 1, 0, 3, 2)), 3), 32);
  }
}

/**
 * Four steps of x (p) times iv, rounded to the nearest integer (ties to even) and clamped to
 * [−127, 127], as i32 lanes: the clamp only acts where 1/d overflowed (a block of subnormals) or on
 * NaN (0), and keeps every build's int8 operands in range.
 */
// @ts-ignore: decorator
@inline function qlanes(p: usize, iv: v128): v128 {
  const q = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v128.load(p), iv)));
  return i32x4.min_s(i32x4.max_s(q, i32x4.splat(-127)), i32x4.splat(127));
}

/** One block's integer dot of one weight row (16 bytes of int8 lanes a, b: its 32 weights in xq's order) with xq's four vectors x0..x3, as four partial i32 sums. */
// @ts-ignore: decorator
@inline function dotBlock(a: v128, b: v128, x0: v128, x1: v128, x2: v128, x3: v128): v128 {
  const s = i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(a), x0), i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(a), x1));
  return i32x4.add(s, i32x4.add(i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(b), x2), i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(b), x3)));
}

/**
 * One block of one weight row (at p) dotted with xq's block x0..x3 (its four vectors as quantActs
 * stored them): Q8 its 32 bytes as stored; Q4 its 16 bytes' low nibbles − 8 (the even steps), then
 * the high ones (the odd). With relaxed SIMD (relaxedActs' layout), Q8: the weights with x's sign,
 * against |x|; Q4: x against the raw nibbles (the 8·Σx correction is the caller's, once per block
 * for a group of rows).
 */
// @ts-ignore: decorator
@inline function rowDot(bits: i32, p: usize, x0: v128, x1: v128, x2: v128, x3: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    if (bits == 8) {
      const a = v128.load(p), b = v128.load(p, 16);
      const s = i32x4.relaxed_dot_i8x16_i7x16_add_s(i8x16.sub(v128.xor(a, x2), x2), x0, i32x4.splat(0));
      return i32x4.relaxed_dot_i8x16_i7x16_add_s(i8x16.sub(v128.xor(b, x3), x3), x1, s);
    }
    const w = v128.load(p);
    return i32x4.relaxed_dot_i8x16_i7x16_add_s(x1, i8x16.shr_u(w, 4), i32x4.relaxed_dot_i8x16_i7x16_add_s(x0, v128.and(w, i8x16.splat(15)), i32x4.splat(0)));
  }
  if (bits == 8) return dotBlock(v128.load(p), v128.load(p, 16), x0, x1, x2, x3);
  const b = v128.load(p);
  return dotBlock(i8x16.sub(v128.and(b, i8x16.splat(15)), i8x16.splat(8)), i8x16.sub(i8x16.shr_u(b, 4), i8x16.splat(8)), x0, x1, x2, x3);
}

/** Four rows' block sums as the exact S_j: with relaxed SIMD and Q4, Σ n·x less 8·Σx (x2 holds 8·Σx in each lane); else as they are. */
// @ts-ignore: decorator
@inline function nibbleFix(bits: i32, s: v128, x2: v128): v128 {
  return ASC_FEATURE_RELAXED_SIMD && bits == 4 ? i32x4.sub(s, x2) : s;
}

/** Step i (0–31, in xq's order) of a quantized block at xp, as quantActs stored it (relaxedActs' layout with relaxed SIMD). */
// @ts-ignore: decorator
@inline function xStep(bits: i32, xp: usize, i: i32): i32 {
  if (!ASC_FEATURE_RELAXED_SIMD) return <i32>load<i16>(xp + ((<usize>i) << 1));
  if (bits == 4) return <i32>load<i8>(xp + <usize>i);
  const m = <i32>load<u8>(xp + <usize>i);
  return load<i8>(xp + 32 + <usize>i) != 0 ? -m : m;
}

/** The four partial sums of rows a..d added across lanes: [Σa, Σb, Σc, Σd] (exact, any order). */
// @ts-ignore: decorator
@inline function hadd4(a: v128, b: v128, c: v128, d: v128): v128 {
  const t0 = i32x4.add(v128.shuffle<i32>(a, b, 0, 4, 1, 5), v128.shuffle<i32>(a, b, 2, 6, 3, 7));
  const t1 = i32x4.add(v128.shuffle<i32>(c, d, 0, 4, 1, 5), v128.shuffle<i32>(c, d, 2, 6, 3, 7));
  return i32x4.add(v128.shuffle<i32>(t0, t1, 0, 1, 4, 5), v128.shuffle<i32>(t0, t1, 2, 3, 6, 7));
}

/**
 * The activation-quantized product for Q8 (`bits` 8) or Q4 (4) weights: out[n, o] for o in [o0, o1),
 * all N rows of xq / dx (quantActs). Per group of 8 rows of W (4 at the end), their scales at every
 * block are converted once into `strip` (32·C/32 bytes), then each row of x runs over the blocks with
 * the group's weights from cache. Rows of W past the last multiple of 4 are summed one by one, the same
 * operations in the same order.
 */
// @ts-ignore: decorator
@inline function linQa(bits: i32, xq: usize, dx: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, strip: usize): void {
  const oRow = (<usize>OC) << 2;
  const qRow = bits == 8 ? <usize>C : (<usize>C) >> 1;
  const qBlock: usize = bits == 8 ? 32 : 16;
  const nb = C >> 5;
  let o = o0;
  for (; o + 4 <= o1; ) {
    // 8 rows of W at a time where there are 8 (more weight streams in flight, x's block loaded once
    // for both halves), else 4; the two halves are the same sums as two groups of 4.
    const hi = o + 8 <= o1;
    if (o + 16 <= OC) touchLines(q + (<usize>(o + 8)) * qRow, 8 * qRow, strip); // the strip is filled below
    for (let j = 0; j < nb; j++) {
      v128.store(strip + ((<usize>j) << 5), scales4(sc, nb, o, j));
      if (hi) v128.store(strip + ((<usize>j) << 5), scales4(sc, nb, o + 4, j), 16);
    }
    const w0 = q + (<usize>o) * qRow;
    const w4 = w0 + 4 * qRow;
    for (let n = 0; n < N; n++) {
      const xn = xq + (<usize>n) * (<usize>nb) * 64;
      const dn = dx + (<usize>n) * (<usize>nb) * 4;
      let acc = f32x4.splat(0), accHi = f32x4.splat(0);
      for (let j = 0; j < nb; j++) {
        const xp = xn + ((<usize>j) << 6);
        const x0 = v128.load(xp), x1 = v128.load(xp, 16), x2 = v128.load(xp, 32), x3 = v128.load(xp, 48);
        const d = v128.load32_splat(dn + ((<usize>j) << 2));
        const st = strip + ((<usize>j) << 5);
        const p = w0 + (<usize>j) * qBlock;
        const s = nibbleFix(bits, hadd4(rowDot(bits, p, x0, x1, x2, x3), rowDot(bits, p + qRow, x0, x1, x2, x3), rowDot(bits, p + 2 * qRow, x0, x1, x2, x3), rowDot(bits, p + 3 * qRow, x0, x1, x2, x3)), x2);
        acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(s), f32x4.mul(v128.load(st), d)));
        if (hi) {
          const ph = w4 + (<usize>j) * qBlock;
          const sh = nibbleFix(bits, hadd4(rowDot(bits, ph, x0, x1, x2, x3), rowDot(bits, ph + qRow, x0, x1, x2, x3), rowDot(bits, ph + 2 * qRow, x0, x1, x2, x3), rowDot(bits, ph + 3 * qRow, x0, x1, x2, x3)), x2);
          accHi = f32x4.add(accHi, f32x4.mul(f32x4.convert_i32x4_s(sh), f32x4.mul(v128.load(st, 16), d)));
        }
      }
      store8(out + (<usize>n) * oRow + ((<usize>o) << 2), acc, accHi, hi);
    }
    o += hi ? 8 : 4;
  }
  for (; o < o1; o++) {
    for (let n = 0; n < N; n++) {
      let acc: f32 = 0;
      for (let j = 0; j < nb; j++) {
        const xp = xq + (((<usize>n) * (<usize>nb) + (<usize>j)) << 6);
        let s: i32 = 0;
        for (let i = 0; i < 32; i++) {
          // Step i of the block in xq's order: Q8 byte i; Q4 the low nibble of byte i (i < 16), else the high of byte i − 16.
          let w: i32;
          if (bits == 8) w = <i32>load<i8>(q + (<usize>o) * qRow + (<usize>j) * 32 + <usize>i);
          else {
            const by = <i32>load<u8>(q + (<usize>o) * qRow + (<usize>j) * 16 + <usize>(i & 15));
            w = (i < 16 ? by & 15 : by >> 4) - 8;
          }
          s += w * xStep(bits, xp, i);
        }
        const sw = half(<u32>load<u16>(sc + (((<usize>o) * (<usize>nb) + (<usize>j)) << 1)));
        acc += <f32>s * (sw * load<f32>(dx + (((<usize>n) * (<usize>nb) + (<usize>j)) << 2)));
      }
      store<f32>(out + (<usize>n) * oRow + ((<usize>o) << 2), acc);
    }
  }
}

/** Q8 weights times int8 activations (linQa): out[n, o] for o in [o0, o1), all n. */
export function linQ8a(xq: usize, dx: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, strip: usize): void {
  linQa(8, xq, dx, N, q, sc, C, out, OC, o0, o1, strip);
}

/** Q4 weights times int8 activations (linQa; xq from quantActs with q4 ≠ 0): out[n, o] for o in [o0, o1), all n. */
export function linQ4a(xq: usize, dx: usize, N: i32, q: usize, sc: usize, C: i32, out: usize, OC: i32, o0: i32, o1: i32, strip: usize): void {
  linQa(4, xq, dx, N, q, sc, C, out, OC, o0, o1, strip);
}

// ───────────────────────── attention and the row kernels ─────────────────────────
// Every pointer below is a byte offset into linear memory; every stride is in f32 elements.
// Vector loops cover 4 elements at a time with a scalar tail in the same order, so no result
// depends on where a tile boundary falls. Sums are single f32 accumulators (one lane each, or four
// lanes added pairwise at the end for the row sums), in ascending index order within each lane.

/**
 * e^x in each lane: Cody–Waite reduction x = n·ln2 + r (ln2 split in two), a degree-7 polynomial
 * for e^r on |r| ≤ ln2/2 (the Cephes expf coefficients), then ·2ⁿ through the exponent bits.
 * x is clamped to [−87, 88] first, so the result is finite and normal: e^x for x < −87 (true value
 * below ~1.6e−38) comes out ~1.6e−38 instead of 0 or a subnormal — an absolute error below 2e−38,
 * and 0 exactly is never returned. NaN stays NaN. Relative error a few f32 ulps on [−87, 88]
 * (tests/simd.test.ts bounds it at 4 ulps through the kernels that use it).
 */
// @ts-ignore: decorator
@inline function vexp(x: v128): v128 {
  x = f32x4.min(f32x4.max(x, f32x4.splat(-87.0)), f32x4.splat(88.0));
  const n = f32x4.nearest(f32x4.mul(x, f32x4.splat(1.44269504088896341)));
  let r = f32x4.sub(x, f32x4.mul(n, f32x4.splat(0.693359375)));
  r = f32x4.sub(r, f32x4.mul(n, f32x4.splat(-2.12194440e-4)));
  let p = f32x4.splat(1.9875691500e-4);
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(1.3981999507e-3));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(8.3334519073e-3));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(4.1665795894e-2));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(1.6666665459e-1));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(5.0000001201e-1));
  p = f32x4.add(f32x4.add(f32x4.mul(p, f32x4.mul(r, r)), r), f32x4.splat(1.0));
  const e = i32x4.shl(i32x4.add(i32x4.trunc_sat_f32x4_s(n), i32x4.splat(127)), 23);
  return f32x4.mul(p, e);
}

/** vexp on one scalar (lane 0): the tails use it so a scalar element gets the same bits as a lane. */
// @ts-ignore: decorator
@inline function sexp(x: f32): f32 {
  return f32x4.extract_lane(vexp(f32x4.splat(x)), 0);
}

/** Sum of the four lanes, ((l0 + l1) + (l2 + l3)). */
// @ts-ignore: decorator
@inline function hsum(v: v128): f32 {
  return (f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1)) + (f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3));
}

/** f32 load/store at element i of the array at byte offset p. */
// @ts-ignore: decorator
@inline function ld(p: usize, i: i32): f32 {
  return load<f32>(p + ((<usize>i) << 2));
}
// @ts-ignore: decorator
@inline function st(p: usize, i: i32, x: f32): void {
  store<f32>(p + ((<usize>i) << 2), x);
}

/**
 * dst[i] (+)= Σ_{j0 ≤ j < j1} w[j·ws] · m[j·ms + i]   for i < n: a weighted sum of rows of m, each
 * element one f32 accumulator in ascending j, added to dst once at the end when `acc`.
 */
// @ts-ignore: decorator
@inline function weightedRows(dst: usize, w: usize, ws: i32, m: usize, ms: i32, j0: i32, j1: i32, n: i32, acc: bool): void {
  const wS = (<usize>ws) << 2;
  const mS = (<usize>ms) << 2;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    let s = f32x4.splat(0);
    let wp = w + (<usize>j0) * wS;
    let mp = m + (<usize>j0) * mS + ((<usize>i) << 2);
    for (let j = j0; j < j1; j++) {
      s = f32x4.add(s, f32x4.mul(v128.load32_splat(wp), v128.load(mp)));
      wp += wS;
      mp += mS;
    }
    put(dst + ((<usize>i) << 2), s, acc);
  }
  for (; i < n; i++) {
    let s: f32 = 0;
    for (let j = j0; j < j1; j++) s += ld(w, j * ws) * ld(m, j * ms + i);
    st(dst, i, acc ? ld(dst, i) + s : s);
  }
}

/**
 * dst[j] = Σ_{i < n} x[i] · mT[i·L4 + j]  for j < ceil4(len): dot products of x with the columns of
 * a transposed matrix mT [n × L4], four columns per step, each one lane summed in ascending i
 * (lanes past len are computed too and must be ignored by the caller).
 */
// @ts-ignore: decorator
@inline function dotColumns(dst: usize, x: usize, mT: usize, L4: i32, n: i32, len: i32): void {
  const row = (<usize>L4) << 2;
  for (let j = 0; j < len; j += 4) {
    let s = f32x4.splat(0);
    let mp = mT + ((<usize>j) << 2);
    for (let i = 0; i < n; i++) {
      s = f32x4.add(s, f32x4.mul(v128.load32_splat(x + ((<usize>i) << 2)), v128.load(mp)));
      mp += row;
    }
    v128.store(dst + ((<usize>j) << 2), s);
  }
}

/** mT[i·L4 + j] = m[j·ms + i] for j < L, i < n; zero for L ≤ j < L4. */
function transposeRows(mT: usize, m: usize, ms: i32, L: i32, L4: i32, n: i32): void {
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < L; j++) st(mT, i * L4 + j, ld(m, j * ms + i));
    for (let j = L; j < L4; j++) st(mT, i * L4 + j, 0);
  }
}

/**
 * Causal attention forward (src/backend/cpu/attention.ts header), one head at a time:
 * query row t of batch b (q, out [B × T × C], C = NH·HS) attends keys/values 0..pos0+t of that
 * batch (k, v [B × Tkv × C]); s = (q·k)·scale, P = softmax(s) (max-shifted, vexp, f32 sum in
 * ascending key order, then ·(1/sum)), out = Σ P·v. When att ≠ 0 (full forward: pos0 = 0,
 * Tkv = T) P is stored in att [B × NH × T × T], zeros above the diagonal.
 * Scratch: kt ≥ HS·ceil4(pos0 + T) floats (K of the head, transposed), p ≥ ceil4(pos0 + T) + 4.
 * The full and the cached forward run this same code, so they agree bit for bit.
 */
export function attnForward(
  q: usize, k: usize, v: usize, out: usize, att: usize,
  B: i32, T: i32, NH: i32, HS: i32, Tkv: i32, pos0: i32, scale: f32, kt: usize, p: usize,
): void {
  const C = NH * HS;
  const L = pos0 + T;
  const L4 = (L + 3) & ~3;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      const kv = ((<usize>(b * Tkv * C + h * HS)) << 2);
      transposeRows(kt, k + kv, C, L, L4, HS);
      for (let t = 0; t < T; t++) {
        const row = ((<usize>((b * T + t) * C + h * HS)) << 2);
        const len = pos0 + t + 1;
        dotColumns(p, q + row, kt, L4, HS, len);
        let max = -Infinity;
        for (let j = 0; j < len; j++) {
          const s = ld(p, j) * scale;
          st(p, j, s);
          if (s > max) max = s;
        }
        let sum: f32 = 0;
        const mx = f32x4.splat(<f32>max);
        for (let j = 0; j < len; j += 4) {
          const pj = p + ((<usize>j) << 2);
          v128.store(pj, vexp(f32x4.sub(v128.load(pj), mx)));
        }
        for (let j = 0; j < len; j++) sum += ld(p, j);
        const inv = f32x4.splat(<f32>1 / sum);
        for (let j = 0; j < len; j += 4) {
          const pj = p + ((<usize>j) << 2);
          v128.store(pj, f32x4.mul(v128.load(pj), inv));
        }
        weightedRows(out + row, p, 1, v + kv, C, 0, len, HS, false);
        if (att != 0) {
          const a = att + ((<usize>(((b * NH + h) * T + t) * T)) << 2);
          memory.copy(a, p, (<usize>len) << 2);
          memory.fill(a + ((<usize>len) << 2), 0, (<usize>(T - len)) << 2);
        }
      }
    }
  }
}

/**
 * Causal attention backward (attention.ts header), one head at a time, accumulating into dq, dk, dv:
 *   dP[t,t2] = dout_t · v_t2 (V of the head transposed into vt),  dot_t = Σ_t2 P·dP,
 *   ds[t,t2] = P·(dP − dot_t)·scale (kept in ds [T × T]),
 *   dq_t += Σ_{t2 ≤ t} ds[t,t2] k_t2,   dk_t2 += Σ_{t ≥ t2} ds[t,t2] q_t,   dv_t2 += Σ_{t ≥ t2} P[t,t2] dout_t.
 * Each gradient element is one f32 sum, added to the incoming value once.
 * Scratch: vt ≥ HS·ceil4(T) floats, ds ≥ T·T + 4.
 */
export function attnBackward(
  dq: usize, dk: usize, dv: usize, dout: usize, q: usize, k: usize, v: usize, att: usize,
  B: i32, T: i32, NH: i32, HS: i32, scale: f32, vt: usize, ds: usize,
): void {
  const C = NH * HS;
  const T4 = (T + 3) & ~3;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      const base = ((<usize>(b * T * C + h * HS)) << 2);
      const P = att + ((<usize>((b * NH + h) * T * T)) << 2);
      transposeRows(vt, v + base, C, T, T4, HS);
      for (let t = 0; t < T; t++) {
        const row = base + (<usize>(t * C) << 2);
        const dsRow = ds + (<usize>(t * T) << 2);
        const pRow = P + (<usize>(t * T) << 2);
        dotColumns(dsRow, dout + row, vt, T4, HS, t + 1);
        let dot: f32 = 0;
        for (let j = 0; j <= t; j++) dot += ld(pRow, j) * ld(dsRow, j);
        for (let j = 0; j <= t; j++) st(dsRow, j, ld(pRow, j) * (ld(dsRow, j) - dot) * scale);
        weightedRows(dq + row, dsRow, 1, k + base, C, 0, t + 1, HS, true);
      }
      for (let t2 = 0; t2 < T; t2++) {
        const row = base + (<usize>(t2 * C) << 2);
        weightedRows(dk + row, ds + ((<usize>t2) << 2), T, q + base, C, t2, T, HS, true);
        weightedRows(dv + row, P + ((<usize>t2) << 2), T, dout + base, C, t2, T, HS, true);
      }
    }
  }
}

/** Σ_c x[c]·y[c] over n elements: four lanes (ascending c in each), then hsum, then the scalar tail. */
// @ts-ignore: decorator
@inline function dot(x: usize, y: usize, n: i32): f32 {
  let s = f32x4.splat(0);
  let c = 0;
  for (; c + 4 <= n; c += 4) {
    const o = (<usize>c) << 2;
    s = f32x4.add(s, f32x4.mul(v128.load(x + o), v128.load(y + o)));
  }
  let r = hsum(s);
  for (; c < n; c++) r += ld(x, c) * ld(y, c);
  return r;
}

/** RMSNorm forward (rmsnorm.ts header) on N rows of C: rstd = 1/√(Σx²/C + eps), out = w ⊙ (x·rstd). */
export function rmsnormFwd(out: usize, rstd: usize, inp: usize, w: usize, N: i32, C: i32, eps: f32): void {
  for (let n = 0; n < N; n++) {
    const x = inp + ((<usize>(n * C)) << 2);
    const y = out + ((<usize>(n * C)) << 2);
    const r: f32 = <f32>1 / Mathf.sqrt(dot(x, x, C) / <f32>C + eps);
    st(rstd, n, r);
    const rv = f32x4.splat(r);
    let c = 0;
    for (; c + 4 <= C; c += 4) {
      const o = (<usize>c) << 2;
      v128.store(y + o, f32x4.mul(v128.load(w + o), f32x4.mul(v128.load(x + o), rv)));
    }
    for (; c < C; c++) st(y, c, ld(w, c) * (ld(x, c) * r));
  }
}

/**
 * RMSNorm backward (rmsnorm.ts header), accumulating: gx = Σ dy·w·x, k = rstd²·gx/C,
 * dinp += rstd·(dy·w − x·k),  dw += Σ_rows dy·x·rstd (dw summed in f32 in ascending row order).
 * Scratch: g ≥ C floats (dy ⊙ w of the row).
 */
export function rmsnormBwd(dinp: usize, dw: usize, dout: usize, inp: usize, w: usize, rstd: usize, N: i32, C: i32, g: usize): void {
  for (let n = 0; n < N; n++) {
    const o0 = (<usize>(n * C)) << 2;
    const x = inp + o0, dy = dout + o0, dx = dinp + o0;
    const r = ld(rstd, n);
    let c = 0;
    for (; c + 4 <= C; c += 4) {
      const o = (<usize>c) << 2;
      v128.store(g + o, f32x4.mul(v128.load(dy + o), v128.load(w + o)));
    }
    for (; c < C; c++) st(g, c, ld(dy, c) * ld(w, c));
    const kk: f32 = (r * r * dot(g, x, C)) / <f32>C;
    const rv = f32x4.splat(r), kv = f32x4.splat(kk);
    c = 0;
    for (; c + 4 <= C; c += 4) {
      const o = (<usize>c) << 2;
      const xv = v128.load(x + o);
      v128.store(dx + o, f32x4.add(v128.load(dx + o), f32x4.mul(rv, f32x4.sub(v128.load(g + o), f32x4.mul(xv, kv)))));
      v128.store(dw + o, f32x4.add(v128.load(dw + o), f32x4.mul(f32x4.mul(v128.load(dy + o), xv), rv)));
    }
    for (; c < C; c++) {
      const xc = ld(x, c);
      st(dx, c, ld(dx, c) + r * (ld(g, c) - xc * kk));
      st(dw, c, ld(dw, c) + ld(dy, c) * xc * r);
    }
  }
}

/** silu(a)·b lanes: a / (1 + e^−a) · b. */
// @ts-ignore: decorator
@inline function vswiglu(a: v128, b: v128): v128 {
  return f32x4.mul(f32x4.div(a, f32x4.add(f32x4.splat(1), vexp(f32x4.neg(a)))), b);
}

/** out = silu(a) ⊙ b over N elements (mlp.ts header). The tail runs the same lanes on a splat. */
export function swigluFwd(out: usize, a: usize, b: usize, N: i32): void {
  let i = 0;
  for (; i + 4 <= N; i += 4) {
    const o = (<usize>i) << 2;
    v128.store(out + o, vswiglu(v128.load(a + o), v128.load(b + o)));
  }
  for (; i < N; i++) st(out, i, f32x4.extract_lane(vswiglu(f32x4.splat(ld(a, i)), f32x4.splat(ld(b, i))), 0));
}

/** (da, db) lanes += dout·b·σ(a)(1 + a(1 − σ(a))), dout·a·σ(a), σ(a) = 1/(1 + e^−a). */
// @ts-ignore: decorator
@inline function swigluGrad(da: usize, db: usize, g: v128, a: v128, b: v128, lanes: i32): void {
  const one = f32x4.splat(1);
  const sg = f32x4.div(one, f32x4.add(one, vexp(f32x4.neg(a))));
  const gda = f32x4.mul(f32x4.mul(f32x4.mul(g, b), sg), f32x4.add(one, f32x4.mul(a, f32x4.sub(one, sg))));
  const gdb = f32x4.mul(f32x4.mul(g, a), sg);
  if (lanes == 4) {
    v128.store(da, f32x4.add(v128.load(da), gda));
    v128.store(db, f32x4.add(v128.load(db), gdb));
  } else {
    store<f32>(da, load<f32>(da) + f32x4.extract_lane(gda, 0));
    store<f32>(db, load<f32>(db) + f32x4.extract_lane(gdb, 0));
  }
}

/** SwiGLU backward over N elements (mlp.ts header), accumulating into da, db. */
export function swigluBwd(da: usize, db: usize, dout: usize, a: usize, b: usize, N: i32): void {
  let i = 0;
  for (; i + 4 <= N; i += 4) {
    const o = (<usize>i) << 2;
    swigluGrad(da + o, db + o, v128.load(dout + o), v128.load(a + o), v128.load(b + o), 4);
  }
  for (; i < N; i++) {
    const o = (<usize>i) << 2;
    swigluGrad(da + o, db + o, f32x4.splat(ld(dout, i)), f32x4.splat(ld(a, i)), f32x4.splat(ld(b, i)), 1);
  }
}

/**
 * log-softmax forward (softmax.ts header) on N rows of V: m = max z·invT, lse = m + log Σ e^(z·invT − m)
 * (the sum in f32, ascending; the log in f64), out = z·invT − lse. A row whose max is ±∞ gets lse = m,
 * like the TS twin. Scratch: e ≥ ceil4(V) floats.
 */
export function logSoftmaxFwd(out: usize, z: usize, N: i32, V: i32, invT: f32, e: usize): void {
  const iv = f32x4.splat(invT);
  for (let n = 0; n < N; n++) {
    const zr = z + ((<usize>(n * V)) << 2);
    const orow = out + ((<usize>(n * V)) << 2);
    let m: f32 = -Infinity;
    for (let v = 0; v < V; v++) {
      const x = ld(zr, v) * invT;
      if (x > m) m = x;
    }
    let lse = m;
    if (m != -Infinity && m != Infinity) {
      const mv = f32x4.splat(m);
      let v = 0;
      for (; v + 4 <= V; v += 4) {
        const o = (<usize>v) << 2;
        v128.store(e + o, vexp(f32x4.sub(f32x4.mul(v128.load(zr + o), iv), mv)));
      }
      for (; v < V; v++) st(e, v, sexp(ld(zr, v) * invT - m));
      let s: f32 = 0;
      for (v = 0; v < V; v++) s += ld(e, v);
      lse = m + <f32>Math.log(<f64>s);
    }
    const lv = f32x4.splat(lse);
    let v = 0;
    for (; v + 4 <= V; v += 4) {
      const o = (<usize>v) << 2;
      v128.store(orow + o, f32x4.sub(f32x4.mul(v128.load(zr + o), iv), lv));
    }
    for (; v < V; v++) st(orow, v, ld(zr, v) * invT - lse);
  }
}

/** log-softmax backward (softmax.ts header), accumulating: dz += (dlp − e^lp · Σ dlp)·invT per row. */
export function logSoftmaxBwd(dz: usize, dlp: usize, lp: usize, N: i32, V: i32, invT: f32): void {
  const iv = f32x4.splat(invT);
  for (let n = 0; n < N; n++) {
    const o0 = (<usize>(n * V)) << 2;
    let s: f32 = 0;
    for (let v = 0; v < V; v++) s += ld(dlp + o0, v);
    const sv = f32x4.splat(s);
    let v = 0;
    for (; v + 4 <= V; v += 4) {
      const o = o0 + ((<usize>v) << 2);
      const d = f32x4.mul(f32x4.sub(v128.load(dlp + o), f32x4.mul(vexp(v128.load(lp + o)), sv)), iv);
      v128.store(dz + o, f32x4.add(v128.load(dz + o), d));
    }
    for (; v < V; v++) {
      const o = o0 + ((<usize>v) << 2);
      store<f32>(dz + o, load<f32>(dz + o) + (load<f32>(dlp + o) - sexp(load<f32>(lp + o)) * s) * invT);
    }
  }
}

/**
 * RoPE (rope.ts header) on q or k [B × T × C], C = NH·HS, HS even, table [· × HS/2 × 2] of (cos, sin):
 *   sgn = +1 (forward):  (y0, y1) = (x0 cos − x1 sin, x0 sin + x1 cos)
 *   sgn = −1 (backward, the inverse rotation, acc ≠ 0 adds into out): (x0 cos + x1 sin, x1 cos − x0 sin)
 * Two pairs per f32x4: x·(cos, cos, cos', cos') + (x1, x0, x1', x0')·(−sin, sin, −sin', sin')·sgn.
 * `out` may be `inp` (each lane is read before it is written).
 */
export function ropeApply(out: usize, inp: usize, table: usize, B: i32, T: i32, NH: i32, HS: i32, pos0: i32, sgn: f32, acc: i32): void {
  const C = NH * HS;
  const flip = f32x4.mul(f32x4.replace_lane(f32x4.replace_lane(f32x4.splat(1), 0, -1), 2, -1), f32x4.splat(sgn));
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const tab = table + ((<usize>((pos0 + t) * HS)) << 2);
      const row = (<usize>((b * T + t) * C)) << 2;
      for (let h = 0; h < NH; h++) {
        const base = row + ((<usize>(h * HS)) << 2);
        let i = 0;
        for (; i + 4 <= HS; i += 4) {
          const o = (<usize>i) << 2;
          const cs = v128.load(tab + o);
          const x = v128.load(inp + base + o);
          const c = v128.shuffle<f32>(cs, cs, 0, 0, 2, 2);
          const s = f32x4.mul(v128.shuffle<f32>(cs, cs, 1, 1, 3, 3), flip);
          const y = f32x4.add(f32x4.mul(x, c), f32x4.mul(v128.shuffle<f32>(x, x, 1, 0, 3, 2), s));
          v128.store(out + base + o, acc != 0 ? f32x4.add(v128.load(out + base + o), y) : y);
        }
        if (i < HS) {
          const o = (<usize>i) << 2;
          const c = load<f32>(tab + o), s = load<f32>(tab + o + 4) * sgn;
          const x0 = load<f32>(inp + base + o), x1 = load<f32>(inp + base + o + 4);
          const y0 = x0 * c + x1 * -s, y1 = x1 * c + x0 * s;
          store<f32>(out + base + o, acc != 0 ? load<f32>(out + base + o) + y0 : y0);
          store<f32>(out + base + o + 4, acc != 0 ? load<f32>(out + base + o + 4) + y1 : y1);
        }
      }
    }
  }
}

/**
 * out = a + s·b over N elements (residual.ts header; the backward is the same with out = a = the
 * gradient: da += 1·dout, db += s·dout). `out` may alias `a` or `b`. With s = 1 every element is
 * one correctly rounded f32 add (s·b is exact), bit-equal to the TS twin.
 */
export function axpy(out: usize, a: usize, b: usize, N: i32, s: f32): void {
  const sv = f32x4.splat(s);
  let i = 0;
  for (; i + 4 <= N; i += 4) {
    const o = (<usize>i) << 2;
    v128.store(out + o, f32x4.add(v128.load(a + o), f32x4.mul(sv, v128.load(b + o))));
  }
  for (; i < N; i++) st(out, i, ld(a, i) + s * ld(b, i));
}
