// kl.wgsl — exact per-state KL over the full vocabulary (twin: klForward in
// src/backend/cpu/softmax.ts):  out[n] = Σ_v p_v (lp_v − lq_v),  lp = log_softmax(zp/τ),
// lq = log_softmax(zq/τ); terms with p_v = 0 contribute 0.
// One workgroup per row; three tree reductions in workgroup memory (max of both rows, both
// exp-sums, the KL sum): deterministic, no atomics. WG must be a power of two.
// Not here: the gradient (kl_backward.wgsl).

struct Params { N: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> zp: array<f32>;
@group(0) @binding(2) var<storage, read> zq: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

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
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; }
  let off = n * P.V;
  var m = vec2f(-3.4028234663852886e38);
  for (var v = tid; v < P.V; v += WG) { m = max(m, vec2f(zp[off + v], zq[off + v]) * P.invT); }
  m = reduce_max2(tid, m);
  var s = vec2f(0.0);
  for (var v = tid; v < P.V; v += WG) { s += exp(vec2f(zp[off + v], zq[off + v]) * P.invT - m); }
  let lse = m + log(reduce_sum2(tid, s));
  var kl = 0.0;
  for (var v = tid; v < P.V; v += WG) {
    let lp = zp[off + v] * P.invT - lse.x;
    let p = exp(lp);
    if (p > 0.0) { kl += p * (lp - (zq[off + v] * P.invT - lse.y)); }
  }
  let total = reduce_sum2(tid, vec2f(kl, 0.0)).x;
  if (tid == 0u) { out[n] = total; }
}
