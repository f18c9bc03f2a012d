// cross_entropy.wgsl — the next-token loss chain in one dispatch (twin: crossEntropy in
// src/backend/cpu/softmax.ts, which composes the four unfused ops), per row n with target t_n:
//   lp_v = z_v − log Σ_u exp(z_u)                  (max-shifted, as logsoftmax.wgsl, τ = 1)
//   lrow[n] = lp[t_n]                              (as gather.wgsl; NaN for t_n outside [0, V))
//   GRAD = 1: dlogits[n, v] += δ(v, t_n)·dout[n] − exp(lp_v)·dout[n]
// — the gradient of Σ_n dout[n]·lrow[n]: gather_backward puts dout[n] at t_n of a zero row, whose
// sum is dout[n] exactly, and logsoftmax_backward turns that into the line above (same f32
// expressions, so the same bits as the unfused chain up to the compiler's contraction).
// One workgroup per row; max and sum by reduce.wgsl's trees (concatenated before this file).
// Not here: a temperature (the RL objectives have their own kernels), the log-probs themselves
// (never stored: no N × V scratch).

struct Params { N: u32, V: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read_write> lrow: array<f32>;
@group(0) @binding(5) var<storage, read_write> dlogits: array<f32>;

override GRAD: u32 = 1u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; } // uniform per workgroup
  let off = n * P.V;
  var m = -3.4028234663852886e38;
  for (var v = tid; v < P.V; v += WG) { m = max(m, logits[off + v] * 1.0); }
  m = wg_max(tid, m);
  var s = 0.0;
  for (var v = tid; v < P.V; v += WG) { s += exp(logits[off + v] * 1.0 - m); }
  let lse = m + log(wg_sum(tid, s));
  let t = targets[n];
  let valid = t >= 0 && u32(t) < P.V;
  if (tid == 0u) {
    if (valid) { lrow[n] = logits[off + u32(t)] * 1.0 - lse; } else { lrow[n] = bitcast<f32>(0x7fc00000u | P._p0); }
  }
  if (GRAD == 1u) {
    let d = dout[n];
    for (var v = tid; v < P.V; v += WG) {
      let g = select(0.0, d, valid && v == u32(t));
      dlogits[off + v] = dlogits[off + v] + (g - exp(logits[off + v] * 1.0 - lse) * d) * 1.0;
    }
  }
}
