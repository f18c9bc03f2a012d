// logsoftmax_backward.wgsl — dlogits[n, v] += (dlogp[n, v] − p[n, v] Σ_u dlogp[n, u]) / τ with
// p = exp(logp) (twin: logSoftmaxBackward in src/backend/cpu/softmax.ts). Accumulates.
// One workgroup per row; the row sum by reduce.wgsl's tree reduction (concatenated before this
// file; deterministic).
// Not here: the forward (logsoftmax.wgsl).

struct Params { N: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dlogits: array<f32>;
@group(0) @binding(2) var<storage, read> dlogp: array<f32>;
@group(0) @binding(3) var<storage, read> logp: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; }
  let off = n * P.V;
  var s = 0.0;
  for (var v = tid; v < P.V; v += WG) { s += dlogp[off + v]; }
  let total = wg_sum(tid, s);
  for (var v = tid; v < P.V; v += WG) {
    dlogits[off + v] = dlogits[off + v] + (dlogp[off + v] - exp(logp[off + v]) * total) * P.invT;
  }
}
