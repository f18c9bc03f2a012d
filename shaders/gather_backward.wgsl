// gather_backward.wgsl — dlogp[n, targets[n]] += dout[n] (twin: gatherBackward in
// src/backend/cpu/softmax.ts). One thread per row, so no two threads touch the same element.
// A target outside [0, V) is skipped. Not here: the forward (gather.wgsl).

struct Params { N: u32, V: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dlogp: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> targets: array<i32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + tid;
  if (n >= P.N) { return; }
  let t = targets[n];
  if (t < 0 || u32(t) >= P.V) { return; }
  let i = n * P.V + u32(t);
  dlogp[i] = dlogp[i] + dout[n];
}
