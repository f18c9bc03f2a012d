// logsoftmax.wgsl — log-probabilities per row: out[n, v] = z[n, v]/τ − log Σ_u exp(z[n, u]/τ),
// max-shifted (twin: logSoftmaxForward in src/backend/cpu/softmax.ts).
// One workgroup per row; WG threads stride over V; max and sum by the tree reductions of
// reduce.wgsl (concatenated before this file; deterministic: fixed order, no atomics).
// WG (declared by reduce.wgsl) must be a power of two.
// Not here: the backward (logsoftmax_backward.wgsl); in place (the wrapper copies logits first).

struct Params { N: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; } // uniform per workgroup: barriers below stay in uniform control flow
  let off = n * P.V;
  var m = -3.4028234663852886e38;
  for (var v = tid; v < P.V; v += WG) { m = max(m, logits[off + v] * P.invT); }
  m = wg_max(tid, m);
  var s = 0.0;
  for (var v = tid; v < P.V; v += WG) { s += exp(logits[off + v] * P.invT - m); }
  let lse = m + log(wg_sum(tid, s));
  for (var v = tid; v < P.V; v += WG) { out[off + v] = logits[off + v] * P.invT - lse; }
}
