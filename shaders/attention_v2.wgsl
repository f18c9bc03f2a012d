// attention_v2.wgsl — causal multi-head attention forward, variant 2: one workgroup per
// (batch b, head h, block of WG query rows), one thread per query row, K and V staged in
// workgroup memory tile by tile, vec4 dot products over the head (twin: attentionForward in
// src/backend/cpu/attention.ts; variant 1 is attention.wgsl):
//   s[t2] = (q_t · k_t2)/√HS for t2 ≤ t,  P = softmax(s),  out_t = Σ_t2 P[t2] v_t2
// Three sweeps per row, no float atomics, every sum in a fixed order (deterministic):
//   1. K tiles: each thread scores its row against the tile's keys (vec4 dots), writes the raw
//      score into its att row and keeps the running max m;
//   2. V tiles: p = exp(s − m) replaces the score in att, l += p, acc += p · v (vec4);
//   3. out_t = acc / l; after a storage barrier the workgroup rescales its block of att rows
//      (P = p / l, one exp per kept pair) and writes the zeros above the diagonal, thread i
//      taking columns i, i + WG, … of each row (contiguous writes).
// Layout (attention_row.wgsl, concatenated before this file): row r = (b·NH + h)·T + t;
// q/out row (b·T + t)·C + h·HS; k/v row (b·T + t2)·C + h·HS. Workgroup w: bh = w / nblk (the
// rows' b·NH + h), block w % nblk covers t = block·WG … block·WG + WG − 1.
// Overrides: WG (rows per block = threads), BK (keys per tile), HS4 = ⌈HS/4⌉ (≤ MAXHS4; the
// lanes past HS are zero in q and in the tiles, so they add nothing).
// Not here: the cached forward and HS > 4·MAXHS4 (attention.wgsl), the backward, an online
// softmax (the kept raw scores let sweep 2 use the final max).

struct Params { T: u32, NH: u32, HS: u32, nblk: u32, groups: u32, scale: f32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> att: array<f32>;
@group(0) @binding(3) var<storage, read> q: array<f32>;
@group(0) @binding(4) var<storage, read> k: array<f32>;
@group(0) @binding(5) var<storage, read> v: array<f32>;

const MAXHS4: u32 = 16u;
override WG: u32 = 64u;
override BK: u32 = 64u;
override HS4: u32 = 4u;

var<workgroup> tile: array<vec4f, BK * HS4>;
var<workgroup> invl: array<f32, WG>;

// Four channels c4·4 … c4·4+3 of a head row starting at `off` (zeros past HS).
fn load4(src: u32, off: u32, c4: u32) -> vec4f {
  let i = c4 * 4u;
  var r = vec4f(0.0);
  if (i + 3u < P.HS) {
    if (src == 0u) { r = vec4f(k[off + i], k[off + i + 1u], k[off + i + 2u], k[off + i + 3u]); }
    else { r = vec4f(v[off + i], v[off + i + 1u], v[off + i + 2u], v[off + i + 3u]); }
  } else {
    for (var j = 0u; j < 4u; j++) {
      if (i + j < P.HS) {
        if (src == 0u) { r[j] = k[off + i + j]; } else { r[j] = v[off + i + j]; }
      }
    }
  }
  return r;
}

// Stage keys (src 0) or values (src 1) k0 … k0 + BK − 1 (those < kEnd) of head row kv.
fn stage(src: u32, tid: u32, kv: u32, C: u32, k0: u32, kEnd: u32) {
  for (var e = tid; e < BK * HS4; e += WG) {
    let j = e / HS4;
    let c4 = e % HS4;
    var x = vec4f(0.0);
    if (k0 + j < kEnd) { x = load4(src, kv + (k0 + j) * C, c4); }
    tile[e] = x;
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let w = wid.x + wid.y * nwg.x;
  if (w >= P.groups) { return; } // workgroup-uniform
  let bh = w / P.nblk;
  let t0 = (w % P.nblk) * WG;
  let tEnd = min(P.T, t0 + WG);   // rows of this block: t0 … tEnd − 1
  let t = t0 + tid;
  let live = t < P.T;
  let row = attention_row(bh * P.T + min(t, P.T - 1u), P.T, P.NH, P.HS, P.T);
  let aOff = (bh * P.T + t) * P.T; // this thread's att row (used only when live)

  var qv: array<vec4f, MAXHS4>;
  var acc: array<vec4f, MAXHS4>;
  for (var c = 0u; c < HS4; c++) {
    let i = c * 4u;
    var r = vec4f(0.0);
    if (live) {
      for (var j = 0u; j < 4u; j++) {
        if (i + j < P.HS) { r[j] = q[row.x + i + j]; }
      }
    }
    qv[c] = r;
    acc[c] = vec4f(0.0);
  }

  // Sweep 1: raw scores and the row max, K tile by K tile (keys 0 … tEnd − 1 for the block).
  var m = -3.4028234663852886e38;
  for (var k0 = 0u; k0 < tEnd; k0 += BK) {
    stage(0u, tid, row.kv, row.C, k0, tEnd);
    workgroupBarrier();
    if (live && k0 <= t) {
      let n = min(BK, t + 1u - k0);
      for (var j = 0u; j < n; j++) {
        var d = vec4f(0.0);
        for (var c = 0u; c < HS4; c++) { d += qv[c] * tile[j * HS4 + c]; }
        let s = (d.x + d.y + d.z + d.w) * P.scale;
        att[aOff + k0 + j] = s;
        m = max(m, s);
      }
    }
    workgroupBarrier();
  }

  // Sweep 2: p = exp(s − m), l = Σ p, acc = Σ p v, V tile by V tile.
  var l = 0.0;
  for (var k0 = 0u; k0 < tEnd; k0 += BK) {
    stage(1u, tid, row.kv, row.C, k0, tEnd);
    workgroupBarrier();
    if (live && k0 <= t) {
      let n = min(BK, t + 1u - k0);
      for (var j = 0u; j < n; j++) {
        let p = exp(att[aOff + k0 + j] - m);
        att[aOff + k0 + j] = p;
        l += p;
        for (var c = 0u; c < HS4; c++) { acc[c] += p * tile[j * HS4 + c]; }
      }
    }
    workgroupBarrier();
  }

  // Sweep 3: out = acc / l; then the block's att rows P = p / l, zeros above the diagonal.
  let inv = 1.0 / l;
  if (live) {
    for (var c = 0u; c < HS4; c++) {
      let o = acc[c] * inv;
      for (var j = 0u; j < 4u; j++) {
        if (c * 4u + j < P.HS) { out[row.x + c * 4u + j] = o[j]; }
      }
    }
  }
  invl[tid] = inv;
  storageBarrier();
  workgroupBarrier();
  for (var r = 0u; r < tEnd - t0; r++) {
    let tr = t0 + r;
    let base = (bh * P.T + tr) * P.T;
    let ir = invl[r];
    for (var c = tid; c < P.T; c += WG) {
      var x = 0.0;
      if (c <= tr) { x = att[base + c] * ir; }
      att[base + c] = x;
    }
  }
}
