// matmul_v1.wgsl — naive strided GEMM, one thread per output element (variant 1 of 3; the
// baseline the faster variants are checked against). Computes
//   out[i, j] (+)= Σ_k A(i, k) · B(k, j),   A(i, k) = a[i·sai + k·sak],  B(k, j) = b[k·sbk + j·sbj]
// for i < M, j < Pn, out row-major [M × Pn]; acc = 1 accumulates, 0 overwrites. The strides let one
// kernel do the three products of src/backend/cpu/matmul.ts (out = inp·Wᵀ, dinp += dout·W,
// dW += doutᵀ·inp). f32 accumulation in ascending k: deterministic.
// Not here: tiling (matmul_v2), register blocking (matmul_v3), quantized weights (matmul_q).

struct Params { M: u32, Pn: u32, K: u32, sai: u32, sak: u32, sbk: u32, sbj: u32, acc: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let idx = (wid.x + wid.y * nwg.x) * WG + tid;
  if (idx >= P.M * P.Pn) { return; }
  let i = idx / P.Pn;
  let j = idx % P.Pn;
  var s = 0.0;
  for (var k = 0u; k < P.K; k++) { s += a[i * P.sai + k * P.sak] * b[k * P.sbk + j * P.sbj]; }
  if (P.acc != 0u) { out[idx] = out[idx] + s; } else { out[idx] = s; }
}
