// matmul_v3.wgsl — tiled, register-blocked strided GEMM with vec4 (variant 3 of 3): a TILE×TILE
// workgroup computes a (4·TILE)×(4·TILE) block of out; each thread holds a 4×4 block of
// accumulators as four vec4 (rows) and, per k, multiplies a 4-row column of A (broadcast) by a
// vec4 of 4 B columns — 16 multiply-adds per 2 workgroup-memory reads of A and 1 of B.
// A tile [4·TILE × TILE] and B tile [TILE × 4·TILE] (as vec4) are staged in workgroup memory
// with bounds-checked scalar loads, so any M, Pn, K (odd included) and any strides work.
// Same maths, strides and acc flag as matmul_v1.wgsl; every output is one f32 accumulator in
// ascending k (deterministic).
// One dispatch may run TWO GEMMs sharing A (g0: a·b → out, then g1: a·b1 → out1; g1.tiles = 0 for
// one): the workgroups past g0's tiles take g1's — how matmulBackward computes dinp and dW in one
// dispatch. Which GEMM a workgroup runs is uniform over the workgroup.
// Not here: vec4 global loads (they would need 16-byte-aligned, multiple-of-4 rows).

struct Gemm { M: u32, Pn: u32, K: u32, sai: u32, sak: u32, sbk: u32, sbj: u32, acc: u32, tilesN: u32, tiles: u32, _p0: u32, _p1: u32 }
struct Params { g0: Gemm, g1: Gemm }
@group(0) @binding(0) var<uniform> P0: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> b1: array<f32>;
@group(0) @binding(5) var<storage, read_write> out1: array<f32>;

override TILE: u32 = 16u;          // threads per side; the block is 4·TILE, the k-step TILE
const R = 4u;                      // register block per thread: R×R
var<workgroup> As: array<f32, TILE * TILE * R>;     // [R·TILE rows × TILE k]
var<workgroup> Bs: array<vec4f, TILE * TILE>;       // [TILE k × TILE vec4 columns]

// P: this workgroup's GEMM; second: it is g1 (b1, out1). Locals of main (uniform), passed down.
fn loadA(P: Gemm, i: u32, k: u32) -> f32 {
  return select(0.0, a[min(i, P.M - 1u) * P.sai + min(k, P.K - 1u) * P.sak], i < P.M && k < P.K);
}
fn loadB(P: Gemm, second: bool, k: u32, j: u32) -> f32 {
  let idx = min(k, P.K - 1u) * P.sbk + min(j, P.Pn - 1u) * P.sbj;
  var v: f32;
  if (second) { v = b1[idx]; } else { v = b[idx]; }
  return select(0.0, v, k < P.K && j < P.Pn);
}
fn store(P: Gemm, second: bool, o: u32, s: f32) {
  if (second) {
    if (P.acc != 0u) { out1[o] = out1[o] + s; } else { out1[o] = s; }
  } else {
    if (P.acc != 0u) { out[o] = out[o] + s; } else { out[o] = s; }
  }
}

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  var t = wid.x + wid.y * nwg.x;
  var P = P0.g0;
  var second = false;
  if (t >= P0.g0.tiles) { // workgroup-uniform
    t -= P0.g0.tiles;
    if (t >= P0.g1.tiles) { return; }
    P = P0.g1;
    second = true;
  }
  let BM = R * TILE;
  let i0 = (t / P.tilesN) * BM;
  let j0 = (t % P.tilesN) * BM;
  let tx = lid.x;
  let ty = lid.y;
  let flat = ty * TILE + tx;
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  for (var k0 = 0u; k0 < P.K; k0 += TILE) {
    // A tile: R·TILE rows × TILE k = R elements per thread (row-major in As).
    for (var r = 0u; r < R; r++) {
      let e = r * TILE * TILE + flat;   // element of the tile
      let row = e / TILE;
      let kk = e % TILE;
      As[e] = loadA(P, i0 + row, k0 + kk);
    }
    // B tile: TILE k × R·TILE columns, as TILE × TILE vec4 (one vec4 per thread).
    let kb = k0 + ty;
    let jb = j0 + tx * R;
    Bs[flat] = vec4f(loadB(P, second, kb, jb), loadB(P, second, kb, jb + 1u), loadB(P, second, kb, jb + 2u), loadB(P, second, kb, jb + 3u));
    workgroupBarrier();
    let kn = min(TILE, P.K - k0);
    for (var kk = 0u; kk < kn; kk++) {
      let bv = Bs[kk * TILE + tx];
      let ar = ty * R;
      acc0 += As[(ar + 0u) * TILE + kk] * bv;
      acc1 += As[(ar + 1u) * TILE + kk] * bv;
      acc2 += As[(ar + 2u) * TILE + kk] * bv;
      acc3 += As[(ar + 3u) * TILE + kk] * bv;
    }
    workgroupBarrier();
  }
  let accs = array<vec4f, 4>(acc0, acc1, acc2, acc3);
  for (var r = 0u; r < R; r++) {
    let i = i0 + ty * R + r;
    if (i >= P.M) { break; }
    for (var c = 0u; c < R; c++) {
      let j = j0 + tx * R + c;
      if (j >= P.Pn) { break; }
      store(P, second, i * P.Pn + j, accs[r][c]);
    }
  }
}
