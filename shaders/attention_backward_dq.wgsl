// attention_backward_dq.wgsl — first half of the causal attention backward (twin:
// attentionBackward in src/backend/cpu/attention.ts), one query row (b, h, t) per workgroup:
//   dP[t2] = dout_t · v_t2,  ds[t2] = P[t2] (dP[t2] − Σ_j P[j] dP[j]) / √HS   (t2 ≤ t)
//   dq_t += Σ_t2 ds[t2] k_t2                                                  (accumulates)
// ds is written to a scratch [B × NH × T × T] (entries t2 ≤ t only) that
// attention_backward_dkv.wgsl then reads by column for dk. Σ_j P dP by reduce.wgsl's tree
// reduction; the dq sum in ascending t2 after a storage barrier — deterministic, no atomics.
// Rows are laid out as in attention.wgsl (attention_row.wgsl, kvT = T; reduce.wgsl and
// attention_row.wgsl are concatenated before this file).
// Not here: dk, dv (attention_backward_dkv.wgsl), the forward (attention.wgsl).

struct Params { rows: u32, T: u32, NH: u32, HS: u32, scale: f32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dq: array<f32>;
@group(0) @binding(2) var<storage, read_write> ds: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> k: array<f32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read> att: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= P.rows) { return; } // workgroup-uniform
  let row = attention_row(r, P.T, P.NH, P.HS, P.T);
  let t = row.t;
  let aOff = r * P.T;
  var dot = 0.0;
  for (var t2 = tid; t2 <= t; t2 += WG) {
    let vOff = row.kv + t2 * row.C;
    var s = 0.0;
    for (var i = 0u; i < P.HS; i++) { s += dout[row.x + i] * v[vOff + i]; }
    ds[aOff + t2] = s;
    dot += att[aOff + t2] * s;
  }
  let tot = wg_sum(tid, dot);
  for (var t2 = tid; t2 <= t; t2 += WG) {
    ds[aOff + t2] = att[aOff + t2] * (ds[aOff + t2] - tot) * P.scale;
  }
  storageBarrier();
  for (var i = tid; i < P.HS; i += WG) {
    var acc = 0.0;
    for (var t2 = 0u; t2 <= t; t2++) { acc += ds[aOff + t2] * k[row.kv + t2 * row.C + i]; }
    dq[row.x + i] = dq[row.x + i] + acc;
  }
}
