// residual.wgsl — scaled residual add out = a + s·b (twin: residualForward in
// src/backend/cpu/residual.ts). One thread per element.
// Not here: in place (the wrapper copies an input that aliases out), broadcasting.

struct Params { N: u32, s: f32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.N) { return; }
  out[i] = a[i] + P.s * b[i];
}
