/**
 * The WebAssembly SIMD kernels' exports (wasm/kernels.ts) as the CPU backend calls them: one list,
 * typed once, for the loader (simdMemory.ts) and the thread pool (threads.ts). Pointers are byte
 * offsets into `memory`; strides are in elements as each kernel's header says.
 *
 * Not here: loading (simdMemory.ts), the kernels' maths (wasm/kernels.ts).
 */
/** The kernels' exports (wasm/kernels.ts); pointers are byte offsets into `memory`. */
export interface Kernels {
  readonly memory: WebAssembly.Memory;
  heapBase(): number;
  gemm(a: number, ars: number, aks: number, b: number, J: number, out: number, R: number, K: number, acc: number): void;
  attnForward(q: number, k: number, v: number, out: number, att: number, B: number, T: number, NH: number, HS: number, Tkv: number, pos0: number, scale: number, kt: number, p: number): void;
  attnBackward(dq: number, dk: number, dv: number, dout: number, q: number, k: number, v: number, att: number, B: number, T: number, NH: number, HS: number, scale: number, vt: number, ds: number): void;
  rmsnormFwd(out: number, rstd: number, inp: number, w: number, N: number, C: number, eps: number): void;
  rmsnormBwd(dinp: number, dw: number, dout: number, inp: number, w: number, rstd: number, N: number, C: number, g: number): void;
  swigluFwd(out: number, a: number, b: number, N: number): void;
  swigluBwd(da: number, db: number, dout: number, a: number, b: number, N: number): void;
  logSoftmaxFwd(out: number, z: number, N: number, V: number, invT: number, e: number): void;
  logSoftmaxBwd(dz: number, dlp: number, lp: number, N: number, V: number, invT: number): void;
  ropeApply(out: number, inp: number, table: number, B: number, T: number, NH: number, HS: number, pos0: number, sgn: number, acc: number): void;
  axpy(out: number, a: number, b: number, N: number, s: number): void;
  linF32(x: number, N: number, w: number, C: number, out: number, OC: number, o0: number, o1: number, cols: number): void;
  linQ8(x: number, N: number, q: number, sc: number, C: number, out: number, OC: number, o0: number, o1: number, cols: number): void;
  linQ4(x: number, N: number, q: number, sc: number, C: number, out: number, OC: number, o0: number, o1: number, cols: number): void;
  dequantRows(out: number, q: number, sc: number, C: number, o0: number, o1: number, bits: number): void;
  panelF32(x: number, N: number, w: number, C: number, out: number, OC: number, o0: number, o1: number, strip: number): void;
  panelQ8(x: number, N: number, q: number, sc: number, C: number, out: number, OC: number, o0: number, o1: number, strip: number): void;
  panelQ4(x: number, N: number, q: number, sc: number, C: number, out: number, OC: number, o0: number, o1: number, strip: number): void;
  quantActs(x: number, N: number, C: number, xq: number, dx: number, q4: number): void;
  linQ8a(xq: number, dx: number, N: number, q: number, sc: number, C: number, out: number, OC: number, o0: number, o1: number, strip: number): void;
  linQ4a(xq: number, dx: number, N: number, q: number, sc: number, C: number, out: number, OC: number, o0: number, o1: number, strip: number): void;
}
