// logsoftmax.wgsl — log-probabilities per row: out[n, v] = z[n, v]/τ − log Σ_u exp(z[n, u]/τ),
// max-shifted (twin: logSoftmaxForward in src/backend/cpu/softmax.ts).
// One workgroup per row; WG threads stride over V; max and sum by tree reduction in workgroup
// memory (deterministic: fixed order, no atomics). WG must be a power of two.
// Not here: the backward (logsoftmax_backward.wgsl); in place (the wrapper copies logits first).

struct Params { N: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

override WG: u32 = 64u;
var<workgroup> red: array<f32, WG>;

fn reduce_max(tid: u32, x: f32) -> f32 {
  red[tid] = x;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) { red[tid] = max(red[tid], red[tid + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn reduce_sum(tid: u32, x: f32) -> f32 {
  red[tid] = x;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) { red[tid] = red[tid] + red[tid + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; } // uniform per workgroup: barriers below stay in uniform control flow
  let off = n * P.V;
  var m = -3.4028234663852886e38;
  for (var v = tid; v < P.V; v += WG) { m = max(m, logits[off + v] * P.invT); }
  m = reduce_max(tid, m);
  var s = 0.0;
  for (var v = tid; v < P.V; v += WG) { s += exp(logits[off + v] * P.invT - m); }
  let lse = m + log(reduce_sum(tid, s));
  for (var v = tid; v < P.V; v += WG) { out[off + v] = logits[off + v] * P.invT - lse; }
}
