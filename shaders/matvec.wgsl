// matvec.wgsl — out (+)= inp · Wᵀ for a few rows of inp (M ≤ 4: decoding, one row per prompt),
// W [OC × C] row-major as stored: f32 (QBITS = 32, its bits read as u32 words), or Q8 / Q4
// (QBITS = 8 / 4, dequantized exactly by qweight.wgsl, listed before this file). Twins:
// matmulForward (src/backend/cpu/matmul.ts) and matmulForwardQ8 / Q4 (src/backend/cpu/quant.ts).
// A tiled GEMM gives a decoding step one row of a 16-row tile per workgroup; here a workgroup of
// WG threads owns ROWS output columns: thread t sums k = t, t + WG, … (adjacent threads read
// adjacent weights of a row) for every row of inp against each of its columns, each weight read
// and dequantized once, then the WG partial sums of each output are added by a tree in
// workgroup memory (fixed order: deterministic). acc = 1 adds into out, 0 overwrites.
// Not here: many rows (matmul_v3, matmul_q), gradients.

struct Params { M: u32, C: u32, OC: u32, acc: u32, groups: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> q: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

override WG: u32 = 64u;
override QBITS: u32 = 32u;
const ROWS: u32 = 4u; // output columns per workgroup
const MAXM: u32 = 4u; // rows of inp
var<workgroup> red: array<f32, MAXM * ROWS * WG>;

fn w_at(o: u32, c: u32) -> f32 {
  if (QBITS == 32u) { return bitcast<f32>(q[o * P.C + c]); }
  return qweight(o, c, P.C);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= P.groups) { return; }
  let j0 = g * ROWS;
  var acc: array<f32, MAXM * ROWS>; // partial sums, index i·ROWS + r
  for (var k = tid; k < P.C; k += WG) {
    for (var r = 0u; r < ROWS; r++) {
      let j = j0 + r;
      if (j >= P.OC) { break; }
      let w = w_at(j, k);
      for (var i = 0u; i < P.M; i++) { acc[i * ROWS + r] += a[i * P.C + k] * w; }
    }
  }
  for (var e = 0u; e < MAXM * ROWS; e++) { red[e * WG + tid] = acc[e]; }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) {
      for (var e = 0u; e < MAXM * ROWS; e++) { red[e * WG + tid] += red[e * WG + tid + s]; }
    }
    workgroupBarrier();
  }
  if (tid < MAXM * ROWS) {
    let i = tid / ROWS;
    let j = j0 + tid % ROWS;
    if (i < P.M && j < P.OC) {
      let o = i * P.OC + j;
      if (P.acc != 0u) { out[o] = out[o] + red[tid * WG]; } else { out[o] = red[tid * WG]; }
    }
  }
}
