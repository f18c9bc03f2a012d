// clipped_loss_rows.wgsl — phase 1 of 3 of the clipped objective's gradient (twin:
// clippedLossBackward in src/backend/cpu/objective.ts): per step k, one workgroup,
//   rows[k] = (lseθ, lseref, u_k = lpθ[a_k] − lpref[a_k], KL_k = Σ_v p_v (lp_v − lq_v))
// with lp = log_softmax(zθ/τ), lq = log_softmax(zref/τ); log-sum-exps and the KL by tree
// reductions in workgroup memory (deterministic). An action outside [0, V) gives u = NaN.
// Not here: the episode-level clipping (clipped_loss_coef.wgsl), the chain rule (clipped_loss_grad.wgsl).

struct Params { K: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> zt: array<f32>;
@group(0) @binding(2) var<storage, read> zr: array<f32>;
@group(0) @binding(3) var<storage, read> actions: array<i32>;
@group(0) @binding(4) var<storage, read_write> rows: array<vec4f>;

override WG: u32 = 64u;
var<workgroup> red2: array<vec2f, WG>;

fn reduce_max2(tid: u32, x: vec2f) -> vec2f {
  red2[tid] = x;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) { red2[tid] = max(red2[tid], red2[tid + s]); }
    workgroupBarrier();
  }
  let r = red2[0];
  workgroupBarrier();
  return r;
}

fn reduce_sum2(tid: u32, x: vec2f) -> vec2f {
  red2[tid] = x;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) { red2[tid] = red2[tid] + red2[tid + s]; }
    workgroupBarrier();
  }
  let r = red2[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let k = wid.x + wid.y * nwg.x;
  if (k >= P.K) { return; }
  let off = k * P.V;
  var m = vec2f(-3.4028234663852886e38);
  for (var v = tid; v < P.V; v += WG) { m = max(m, vec2f(zt[off + v], zr[off + v]) * P.invT); }
  m = reduce_max2(tid, m);
  var s = vec2f(0.0);
  for (var v = tid; v < P.V; v += WG) { s += exp(vec2f(zt[off + v], zr[off + v]) * P.invT - m); }
  let lse = m + log(reduce_sum2(tid, s));
  var kl = 0.0;
  for (var v = tid; v < P.V; v += WG) {
    let lp = zt[off + v] * P.invT - lse.x;
    let p = exp(lp);
    if (p > 0.0) { kl += p * (lp - (zr[off + v] * P.invT - lse.y)); }
  }
  let KL = reduce_sum2(tid, vec2f(kl, 0.0)).x;
  if (tid == 0u) {
    let a = actions[k];
    var u = bitcast<f32>(0x7fc00000u | P._pad); // NaN for a bad action (P._pad is 0)
    if (a >= 0 && u32(a) < P.V) {
      u = (zt[off + u32(a)] * P.invT - lse.x) - (zr[off + u32(a)] * P.invT - lse.y);
    }
    rows[k] = vec4f(lse.x, lse.y, u, KL);
  }
}
