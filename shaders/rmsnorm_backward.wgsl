// rmsnorm_backward.wgsl — RMSNorm backward, accumulating (twin: rmsnormBackward in
// src/backend/cpu/rmsnorm.ts), both gradients in ONE dispatch, with g_c = dy_c · w_c:
//   dx_c += rstd · (g_c − x_c · rstd² · (1/C) Σ_i g_i x_i)        workgroups [0, rows): one per row
//   dw_c += Σ_n dy_n,c · x_n,c · rstd_n                            workgroups [rows, rows + cols):
//                                                                  one thread per column c
// Rows: Σ_i g_i x_i by reduce.wgsl's tree reduction (concatenated before this file;
// deterministic), WG (declared there) a power of two. Columns: deterministic without atomics —
// each thread adds the rows in ascending n onto the running value of dw_c (the CPU twin's
// order); reads are coalesced across c. Which part a workgroup does is uniform over it; rows = 0
// or cols = 0 runs one part alone (the wrapper does, when dinp and dweight share a buffer).
// Not here: the forward (rmsnorm.wgsl), LayerNorm.

struct Params { N: u32, C: u32, rows: u32, cols: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dinp: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> inp: array<f32>;
@group(0) @binding(4) var<storage, read> weight: array<f32>;
@group(0) @binding(5) var<storage, read> rstd: array<f32>;
@group(0) @binding(6) var<storage, read_write> dweight: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let w = wid.x + wid.y * nwg.x;
  if (w >= P.rows) { // workgroup-uniform: a block of weight columns
    let c = (w - P.rows) * WG + tid;
    if (w - P.rows < P.cols && c < P.C) {
      var acc = dweight[c];
      for (var n = 0u; n < P.N; n++) {
        let i = n * P.C + c;
        acc += dout[i] * inp[i] * rstd[n];
      }
      dweight[c] = acc;
    }
    return; // uniform: the rows' tree reduction below keeps uniform control flow
  }
  let n = w;
  let off = n * P.C;
  var gx = 0.0;
  for (var c = tid; c < P.C; c += WG) { gx += dout[off + c] * weight[c] * inp[off + c]; }
  let r = rstd[n];
  let k = r * r * wg_sum(tid, gx) / f32(P.C);
  for (var c = tid; c < P.C; c += WG) {
    dinp[off + c] = dinp[off + c] + r * (dout[off + c] * weight[c] - inp[off + c] * k);
  }
}
