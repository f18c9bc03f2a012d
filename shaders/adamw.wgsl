// adamw.wgsl — one AdamW step over n parameters in place (twin: adamwStep in
// src/backend/cpu/adamw.ts):
//   m ← β1 m + (1−β1) g,  v ← β2 v + (1−β2) g²,  θ ← θ − lr (m/bc1 / (√(v/bc2) + eps) + λ θ)
// with the bias corrections bc1 = 1 − β1ᵗ, bc2 = 1 − β2ᵗ computed on the host (f64) per step.
// One thread per parameter. Not here: gradient clipping, schedules, zeroing the gradients.

struct Params { n: u32, lr: f32, b1: f32, b2: f32, eps: f32, wd: f32, bc1: f32, bc2: f32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> params: array<f32>;
@group(0) @binding(2) var<storage, read> grads: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.n) { return; }
  let g = grads[i];
  let mi = P.b1 * m[i] + (1.0 - P.b1) * g;
  let vi = P.b2 * v[i] + (1.0 - P.b2) * g * g;
  m[i] = mi;
  v[i] = vi;
  let p = params[i];
  params[i] = p - P.lr * ((mi / P.bc1) / (sqrt(vi / P.bc2) + P.eps) + P.wd * p);
}
