// attention_backward_dq.wgsl — first half of the causal attention backward (twin:
// attentionBackward in src/backend/cpu/attention.ts), one query row (b, h, t) per workgroup:
//   dP[t2] = dout_t · v_t2,  ds[t2] = P[t2] (dP[t2] − Σ_j P[j] dP[j]) / √HS   (t2 ≤ t)
//   dq_t += Σ_t2 ds[t2] k_t2                                                  (accumulates)
// ds is written to a scratch [B × NH × T × T] (entries t2 ≤ t only) that
// attention_backward_dkv.wgsl then reads by column for dk. Σ_j P dP by tree reduction; the dq
// sum in ascending t2 after a storage barrier — deterministic, no atomics.
// Not here: dk, dv (attention_backward_dkv.wgsl), the forward (attention.wgsl).

struct Params { rows: u32, T: u32, NH: u32, HS: u32, scale: f32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dq: array<f32>;
@group(0) @binding(2) var<storage, read_write> ds: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> k: array<f32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;
@group(0) @binding(6) var<storage, read> att: array<f32>;

override WG: u32 = 64u;
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= P.rows) { return; } // workgroup-uniform
  let t = r % P.T;
  let bh = r / P.T;
  let h = bh % P.NH;
  let b = bh / P.NH;
  let C = P.NH * P.HS;
  let rowOff = (b * P.T + t) * C + h * P.HS;
  let kvBase = b * P.T * C + h * P.HS;
  let aOff = r * P.T;
  var dot = 0.0;
  for (var t2 = tid; t2 <= t; t2 += WG) {
    let vOff = kvBase + t2 * C;
    var s = 0.0;
    for (var i = 0u; i < P.HS; i++) { s += dout[rowOff + i] * v[vOff + i]; }
    ds[aOff + t2] = s;
    dot += att[aOff + t2] * s;
  }
  red[tid] = dot;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) { red[tid] = red[tid] + red[tid + s]; }
    workgroupBarrier();
  }
  let tot = red[0];
  for (var t2 = tid; t2 <= t; t2 += WG) {
    ds[aOff + t2] = att[aOff + t2] * (ds[aOff + t2] - tot) * P.scale;
  }
  storageBarrier();
  for (var i = tid; i < P.HS; i += WG) {
    var acc = 0.0;
    for (var t2 = 0u; t2 <= t; t2++) { acc += ds[aOff + t2] * k[kvBase + t2 * C + i]; }
    dq[rowOff + i] = dq[rowOff + i] + acc;
  }
}
