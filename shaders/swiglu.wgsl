// swiglu.wgsl — SwiGLU gate out = silu(a) · b, silu(a) = a · σ(a) (twin: swigluForward in
// src/backend/cpu/mlp.ts). One thread per element.
// Not here: the projections around it (matmul kernels; the mlp wrapper composes them).

struct Params { N: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.N) { return; }
  let x = a[i];
  out[i] = (x / (1.0 + exp(-x))) * b[i];
}
