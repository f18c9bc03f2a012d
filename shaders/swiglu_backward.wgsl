// swiglu_backward.wgsl — SwiGLU gate gradients, accumulating (twin: swigluBackward in
// src/backend/cpu/mlp.ts):  σ = σ(a),  da += dout · b · σ (1 + a (1 − σ)),  db += dout · a σ.
// One thread per element.
// Not here: the forward (swiglu.wgsl).

struct Params { N: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> da: array<f32>;
@group(0) @binding(2) var<storage, read_write> db: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> a: array<f32>;
@group(0) @binding(5) var<storage, read> b: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.N) { return; }
  let x = a[i];
  let sg = 1.0 / (1.0 + exp(-x));
  let g = dout[i];
  da[i] = da[i] + g * b[i] * sg * (1.0 + x * (1.0 - sg));
  db[i] = db[i] + g * x * sg;
}
