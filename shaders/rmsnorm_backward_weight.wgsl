// rmsnorm_backward_weight.wgsl — RMSNorm weight gradient, accumulating (twin: rmsnormBackward's
// dweight in src/backend/cpu/rmsnorm.ts):  dw_c += Σ_n dy_n,c · x_n,c · rstd_n.
// Deterministic without atomics: one thread per column c adds the rows in ascending n onto the
// running value of dw_c (the CPU twin's order); reads are coalesced across c.
// Not here: the input gradient (rmsnorm_backward.wgsl).

struct Params { N: u32, C: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dweight: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> inp: array<f32>;
@group(0) @binding(4) var<storage, read> rstd: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let c = (wid.x + wid.y * nwg.x) * WG + tid;
  if (c >= P.C) { return; }
  var acc = dweight[c];
  for (var n = 0u; n < P.N; n++) {
    let i = n * P.C + c;
    acc += dout[i] * inp[i] * rstd[n];
  }
  dweight[c] = acc;
}
