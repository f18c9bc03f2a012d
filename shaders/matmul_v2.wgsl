// matmul_v2.wgsl — tiled strided GEMM (variant 2 of 3): a TILE×TILE workgroup computes a
// TILE×TILE block of out, staging TILE×TILE tiles of A and B in workgroup memory so that each
// global element is read once per tile instead of once per output. Same maths, strides and
// acc flag as matmul_v1.wgsl; f32 accumulation in ascending k (deterministic).
// Workgroups: one per output tile, linear id t → (t / tilesN, t % tilesN).
// Not here: register blocking (matmul_v3).

struct Params { M: u32, Pn: u32, K: u32, sai: u32, sak: u32, sbk: u32, sbj: u32, acc: u32, tilesN: u32, tiles: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

override TILE: u32 = 16u;
var<workgroup> As: array<f32, TILE * TILE>;
var<workgroup> Bs: array<f32, TILE * TILE>;

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let t = wid.x + wid.y * nwg.x;
  if (t >= P.tiles) { return; } // workgroup-uniform
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
    Bs[ly * TILE + lx] = select(0.0, b[min(kb, P.K - 1u) * P.sbk + min(j, P.Pn - 1u) * P.sbj], kb < P.K && j < P.Pn);
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
