// residual_backward.wgsl — da += dout, db += s·dout (twin: residualBackward in
// src/backend/cpu/residual.ts), accumulating. Overrides HAS_A / HAS_B (0 or 1) select the
// gradients written; the wrapper binds a dummy buffer for a skipped one. One thread per element.
// Not here: the forward (residual.wgsl).

struct Params { N: u32, s: f32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> da: array<f32>;
@group(0) @binding(2) var<storage, read_write> db: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;

override WG: u32 = 64u;
override HAS_A: u32 = 1u;
override HAS_B: u32 = 1u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.N) { return; }
  let g = dout[i];
  if (HAS_A != 0u) { da[i] = da[i] + g; }
  if (HAS_B != 0u) { db[i] = db[i] + P.s * g; }
}
