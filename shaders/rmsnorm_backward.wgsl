// rmsnorm_backward.wgsl — RMSNorm input gradient, accumulating (twin: rmsnormBackward's dinp in
// src/backend/cpu/rmsnorm.ts), with g_c = dy_c · w_c:
//   dx_c += rstd · (g_c − x_c · rstd² · (1/C) Σ_i g_i x_i)
// One workgroup per row; Σ_i g_i x_i by reduce.wgsl's tree reduction (concatenated before this
// file; deterministic). WG (declared there) a power of two.
// Not here: the weight gradient (rmsnorm_backward_weight.wgsl: a sum over rows, done per column).

struct Params { N: u32, C: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dinp: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> inp: array<f32>;
@group(0) @binding(4) var<storage, read> weight: array<f32>;
@group(0) @binding(5) var<storage, read> rstd: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; } // workgroup-uniform
  let off = n * P.C;
  var gx = 0.0;
  for (var c = tid; c < P.C; c += WG) { gx += dout[off + c] * weight[c] * inp[off + c]; }
  let r = rstd[n];
  let k = r * r * wg_sum(tid, gx) / f32(P.C);
  for (var c = tid; c < P.C; c += WG) {
    dinp[off + c] = dinp[off + c] + r * (dout[off + c] * weight[c] - inp[off + c] * k);
  }
}
