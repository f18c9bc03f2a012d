// attention.wgsl — causal multi-head attention forward for one query row per workgroup (twins:
// attentionForward and attentionCachedForward in src/backend/cpu/attention.ts):
//   s[t2] = (q_t · k_t2)/√HS for t2 < len = pos0 + t + 1,  P = softmax(s),  out_t = Σ_t2 P[t2] v_t2
// Serves both twins through its strides: the full forward has kvT = T, L = T, pos0 = 0 and
// ZERO = 1 (att entries above the diagonal are written 0, as the CPU does); the cached forward
// reads k, v from a cache of kvT = Tmax rows per batch, with L = pos0 + T and att a scratch.
// Steps: each thread scores its keys t2 ≡ tid (mod WG) into the att row, max and sum by the tree
// reductions of reduce.wgsl (deterministic), each thread normalizes its own entries; after a
// storage barrier each thread computes output channels i ≡ tid (mod WG) as Σ_t2 in ascending
// order (f32). Row index r = (b·NH + h)·T + t; q/out row (b·T + t)·C + h·HS; k/v row
// (b·kvT + t2)·C + h·HS — attention_row.wgsl's layout (reduce.wgsl and attention_row.wgsl are
// concatenated before this file).
// Not here: the backward (attention_backward_dq.wgsl, attention_backward_dkv.wgsl), the
// projections, RoPE, GQA, dropout; the tiled full forward (attention_v2.wgsl).

struct Params { rows: u32, T: u32, NH: u32, HS: u32, kvT: u32, L: u32, pos0: u32, scale: f32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> att: array<f32>;
@group(0) @binding(3) var<storage, read> q: array<f32>;
@group(0) @binding(4) var<storage, read> k: array<f32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;

override ZERO: u32 = 1u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= P.rows) { return; } // workgroup-uniform
  let row = attention_row(r, P.T, P.NH, P.HS, P.kvT);
  let len = P.pos0 + row.t + 1u;
  let aOff = r * P.L;
  var m = -3.4028234663852886e38;
  for (var t2 = tid; t2 < len; t2 += WG) {
    let kOff = row.kv + t2 * row.C;
    var s = 0.0;
    for (var i = 0u; i < P.HS; i++) { s += q[row.x + i] * k[kOff + i]; }
    s = s * P.scale;
    att[aOff + t2] = s;
    m = max(m, s);
  }
  m = wg_max(tid, m);
  var sum = 0.0;
  for (var t2 = tid; t2 < len; t2 += WG) {
    let e = exp(att[aOff + t2] - m);
    att[aOff + t2] = e;
    sum += e;
  }
  let inv = 1.0 / wg_sum(tid, sum);
  for (var t2 = tid; t2 < len; t2 += WG) { att[aOff + t2] = att[aOff + t2] * inv; }
  if (ZERO != 0u) {
    for (var t2 = len + tid; t2 < P.L; t2 += WG) { att[aOff + t2] = 0.0; }
  }
  storageBarrier();
  for (var i = tid; i < P.HS; i += WG) {
    var acc = 0.0;
    for (var t2 = 0u; t2 < len; t2++) { acc += att[aOff + t2] * v[row.kv + t2 * row.C + i]; }
    out[row.x + i] = acc;
  }
}
