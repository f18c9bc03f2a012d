// rmsnorm.wgsl — RMSNorm forward (twin: rmsnormForward in src/backend/cpu/rmsnorm.ts):
//   rstd_n = 1/√((1/C) Σ_c x_c² + eps),  out_n,c = w_c · (x_n,c · rstd_n);  saves rstd.
// One workgroup per row; the sum of squares by reduce.wgsl's tree reduction (concatenated before
// this file; deterministic: fixed order, no atomics). WG (declared there) must be a power of two.
// Not here: the backward (rmsnorm_backward.wgsl: both gradients), LayerNorm.

struct Params { N: u32, C: u32, eps: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(3) var<storage, read> inp: array<f32>;
@group(0) @binding(4) var<storage, read> weight: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; } // workgroup-uniform
  let off = n * P.C;
  var ss = 0.0;
  for (var c = tid; c < P.C; c += WG) {
    let x = inp[off + c];
    ss += x * x;
  }
  let r = 1.0 / sqrt(wg_sum(tid, ss) / f32(P.C) + P.eps);
  if (tid == 0u) { rstd[n] = r; }
  for (var c = tid; c < P.C; c += WG) { out[off + c] = weight[c] * (inp[off + c] * r); }
}
