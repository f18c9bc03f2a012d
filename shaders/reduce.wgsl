// reduce.wgsl — workgroup tree reductions: a helper concatenated in front of the kernels that
// reduce a row per workgroup (defineKernel({ shaders: ['reduce', 'rmsnorm'], … })), not a kernel.
// It declares what those kernels then share and must not redeclare:
//   override WG         — the workgroup size (a power of two), set by the wrapper;
//   var<workgroup> red  — the scratch, WG entries of vec2f.
// Each wg_* function takes every thread's partial x and returns the combined value to every
// thread: pairs (tid, tid + s) for s = WG/2, WG/4, …, 1 — a fixed order, so the result is
// deterministic (no atomics) and bit-identical from run to run. The scalar forms run the same
// tree on the first component (the same f32 operations in the same order as a scalar tree).
// Call them from workgroup-uniform control flow (they hold barriers); each ends with a barrier,
// so the scratch can be reused at once.
// Not here: any bindings; the loops over a row (the kernels, and kl_row.wgsl); reductions of
// other kinds (argmax with index, prefix sums, u32 counts: sample.wgsl, clipped_loss_coef.wgsl).

override WG: u32 = 64u;
var<workgroup> red: array<vec2f, WG>;

// The tree: componentwise max (isMax) or Σ over the workgroup of every thread's x.
fn wg_reduce2(tid: u32, x: vec2f, isMax: bool) -> vec2f {
  red[tid] = x;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) {
      if (isMax) { red[tid] = max(red[tid], red[tid + s]); } else { red[tid] = red[tid] + red[tid + s]; }
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

// Two rows at once (componentwise max / Σ), and one row.
fn wg_max2(tid: u32, x: vec2f) -> vec2f { return wg_reduce2(tid, x, true); }
fn wg_sum2(tid: u32, x: vec2f) -> vec2f { return wg_reduce2(tid, x, false); }
fn wg_max(tid: u32, x: f32) -> f32 { return wg_reduce2(tid, vec2f(x, 0.0), true).x; }
fn wg_sum(tid: u32, x: f32) -> f32 { return wg_reduce2(tid, vec2f(x, 0.0), false).x; }
