// matmul_q.wgsl — GEMM against quantized weights, tiled like matmul_v2 (twins:
// matmulForwardQ8/Q4 and matmulBackwardInputQ8/Q4 in src/backend/cpu/quant.ts). The weight
// W [OC × C] is stored in blocks of 32 along C with one f16 scale each:
//   QBITS = 8: q[o·C + c] int8, W = q · s                     (GGUF Q8_0 numbers)
//   QBITS = 4: nibble of byte ⌊(o·C + c)/2⌋, low for even c, W = (nibble − 8) · s  (MatMulNBits)
//   s = f16(scales[o·(C/32) + ⌊c/32⌋]);  bytes and halves arrive packed little-endian in u32 words.
// Computes out[i, j] (+)= Σ_k A(i, k) · B(k, j), A(i, k) = a[i·sai + k·sak], and
//   wT = 0:  B(k, j) = W[j, k]   (forward:        out = inp · Wᵀ)
//   wT = 1:  B(k, j) = W[k, j]   (input gradient: dinp += dout · W)
// Tiles are dequantized when staged in workgroup memory (q·s is exact in f32), so the result
// is that of the dense GEMM on the dequantized weights (qweight.wgsl, listed before this file).
// Deterministic (ascending k).
// Not here: gradients for the quantized weights (frozen base), quantizing.

struct Params { M: u32, Pn: u32, K: u32, sai: u32, sak: u32, wT: u32, C: u32, acc: u32, tilesN: u32, tiles: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> q: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

override TILE: u32 = 16u;
override QBITS: u32 = 8u;
var<workgroup> As: array<f32, TILE * TILE>;
var<workgroup> Bs: array<f32, TILE * TILE>;

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let t = wid.x + wid.y * nwg.x;
  if (t >= P.tiles) { return; }
  let i0 = (t / P.tilesN) * TILE;
  let j0 = (t % P.tilesN) * TILE;
  let ly = lid.y;
  let lx = lid.x;
  let i = i0 + ly;
  let j = j0 + lx;
  var s = 0.0;
  for (var k0 = 0u; k0 < P.K; k0 += TILE) {
    let ka = k0 + lx;
    As[ly * TILE + lx] = select(0.0, a[min(i, P.M - 1u) * P.sai + min(ka, P.K - 1u) * P.sak], i < P.M && ka < P.K);
    let kb = k0 + ly;
    var w = 0.0;
    if (kb < P.K && j < P.Pn) {
      if (P.wT == 0u) { w = qweight(j, kb, P.C); } else { w = qweight(kb, j, P.C); }
    }
    Bs[ly * TILE + lx] = w;
    workgroupBarrier();
    let kn = min(TILE, P.K - k0);
    for (var kk = 0u; kk < kn; kk++) { s += As[ly * TILE + kk] * Bs[kk * TILE + lx]; }
    workgroupBarrier();
  }
  if (i < P.M && j < P.Pn) {
    let o = i * P.Pn + j;
    if (P.acc != 0u) { out[o] = out[o] + s; } else { out[o] = s; }
  }
}
