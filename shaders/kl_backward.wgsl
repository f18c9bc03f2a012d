// kl_backward.wgsl — gradient of the exact per-state KL (twin: klBackward in
// src/backend/cpu/softmax.ts), accumulating:
//   dzp_v += dout_n · p_v ((lp_v − lq_v) − KL_n) / τ      (only where p_v > 0)
//   dzq_v += dout_n · (q_v − p_v) / τ
// One workgroup per row: the row's log-sum-exps and KL by tree reductions (deterministic), then
// an elementwise pass. Override HAS_P / HAS_Q (0 or 1) select which gradient is written; the
// wrapper binds a dummy buffer for the other.
// Not here: the forward (kl.wgsl).

struct Params { N: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dzp: array<f32>;
@group(0) @binding(2) var<storage, read_write> dzq: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> zp: array<f32>;
@group(0) @binding(5) var<storage, read> zq: array<f32>;

override WG: u32 = 64u;
override HAS_P: u32 = 1u;
override HAS_Q: u32 = 1u;
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
  let g = dout[n] * P.invT;
  if (HAS_P != 0u) {
    var kl = 0.0;
    for (var v = tid; v < P.V; v += WG) {
      let lp = zp[off + v] * P.invT - lse.x;
      let p = exp(lp);
      if (p > 0.0) { kl += p * (lp - (zq[off + v] * P.invT - lse.y)); }
    }
    let KL = reduce_sum2(tid, vec2f(kl, 0.0)).x;
    for (var v = tid; v < P.V; v += WG) {
      let lp = zp[off + v] * P.invT - lse.x;
      let p = exp(lp);
      if (p > 0.0) { dzp[off + v] = dzp[off + v] + g * p * (lp - (zq[off + v] * P.invT - lse.y) - KL); }
    }
  }
  if (HAS_Q != 0u) {
    for (var v = tid; v < P.V; v += WG) {
      let p = exp(zp[off + v] * P.invT - lse.x);
      let q = exp(zq[off + v] * P.invT - lse.y);
      dzq[off + v] = dzq[off + v] + g * (q - p);
    }
  }
}
