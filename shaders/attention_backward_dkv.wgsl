// attention_backward_dkv.wgsl — second half of the causal attention backward (twin:
// attentionBackward in src/backend/cpu/attention.ts), one thread per key element (b, h, t2, i):
//   dk_t2,i += Σ_{t ≥ t2} ds[t, t2] q_t,i,    dv_t2,i += Σ_{t ≥ t2} P[t, t2] dout_t,i
// with ds from attention_backward_dq.wgsl. Each thread sums its column in ascending t and adds
// once: deterministic, no atomics. Rows are laid out as in attention.wgsl (attention_row.wgsl,
// concatenated before this file, with kvT = T: the key row t2 is a row of [B, T, C] like q's).
// Not here: dP, ds and dq (attention_backward_dq.wgsl).

struct Params { total: u32, T: u32, NH: u32, HS: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dk: array<f32>;
@group(0) @binding(2) var<storage, read_write> dv: array<f32>;
@group(0) @binding(3) var<storage, read> ds: array<f32>;
@group(0) @binding(4) var<storage, read> att: array<f32>;
@group(0) @binding(5) var<storage, read> q: array<f32>;
@group(0) @binding(6) var<storage, read> dout: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let idx = (wid.x + wid.y * nwg.x) * WG + tid;
  if (idx >= P.total) { return; }
  let i = idx % P.HS;
  let key = attention_row(idx / P.HS, P.T, P.NH, P.HS, P.T); // row (b·NH + h)·T + t2
  let t2 = key.t;
  let col = key.bh * P.T * P.T + t2; // att / ds [b, h, t, t2] = col + t·T
  var ak = 0.0;
  var av = 0.0;
  for (var t = t2; t < P.T; t++) {
    let a = col + t * P.T;
    let row = key.kv + t * key.C + i; // (b·T + t)·C + h·HS + i: query row t
    ak += ds[a] * q[row];
    av += att[a] * dout[row];
  }
  let o = key.x + i;
  dk[o] = dk[o] + ak;
  dv[o] = dv[o] + av;
}
