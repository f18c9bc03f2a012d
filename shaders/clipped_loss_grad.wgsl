// clipped_loss_grad.wgsl — phase 3 of 3 of the clipped objective's gradient (twin:
// clippedLossBackward in src/backend/cpu/objective.ts): per step k, one workgroup, accumulates
//   dlogits[k, v] += scale/τ · ( c_k (1[v = a_k] − p_v) − (β/K) p_v ((lp_v − lq_v) − KL_k) )
// (the KL term only where p_v > 0), from phase 1's rows (lseθ, lseref, u, KL) and phase 2's c_k.
// Elementwise: no reductions. Not here: phases 1 and 2.

struct Params { K: u32, V: u32, invT: f32, g: f32, kb: f32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> zt: array<f32>;
@group(0) @binding(2) var<storage, read> zr: array<f32>;
@group(0) @binding(3) var<storage, read> actions: array<i32>;
@group(0) @binding(4) var<storage, read> rows: array<vec4f>;
@group(0) @binding(5) var<storage, read> coef: array<f32>;
@group(0) @binding(6) var<storage, read_write> dlogits: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let k = wid.x + wid.y * nwg.x;
  if (k >= P.K) { return; }
  let off = k * P.V;
  let row = rows[k];
  let c = coef[k];
  let a = actions[k];
  for (var v = tid; v < P.V; v += WG) {
    let lp = zt[off + v] * P.invT - row.x;
    let p = exp(lp);
    let dLogPi = select(0.0, 1.0, i32(v) == a) - p;
    var dKl = 0.0;
    if (p > 0.0) { dKl = p * (lp - (zr[off + v] * P.invT - row.y) - row.w); }
    dlogits[off + v] = dlogits[off + v] + P.g * (c * dLogPi - P.kb * dKl);
  }
}
