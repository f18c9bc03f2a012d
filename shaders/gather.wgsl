// gather.wgsl — out[n] = logp[n, targets[n]] (twin: gatherForward in src/backend/cpu/softmax.ts).
// One thread per row. A target outside [0, V) yields NaN (the CPU twin throws; a kernel cannot).
// Not here: the backward (gather_backward.wgsl).

struct Params { N: u32, V: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> logp: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + tid;
  if (n >= P.N) { return; }
  let t = targets[n];
  if (t < 0 || u32(t) >= P.V) {
    out[n] = bitcast<f32>(0x7fc00000u | P._p0); // NaN (P._p0 is 0; a constant NaN is not valid WGSL)
    return;
  }
  out[n] = logp[n * P.V + u32(t)];
}
