// sample.wgsl — next-token sampling with temperature and top-k, driven by Philox4x32-10 with the
// counter layout of the CPU sampler (twin: sampleForward in src/backend/cpu/sampling.ts):
//   key = (seed, stream), counter = (step, seq0 + b, 0, 0), u = uniform(word 0) ∈ [0, 1).
// Row b (logits z [V]), one workgroup per row (philox.wgsl is concatenated before this file):
//   greedy (τ = 0 or k = 1): argmax z, lowest index on ties (tree reduction of (value, index));
//   else keep set S = the k largest z, ties to the lower index: the k-th element (z*, i*) of the
//     order (z desc, index asc) is found by ranking (each v counts the elements before it —
//     O(V²/WG), fine for the small vocabularies of this project), then v ∈ S iff
//     z_v > z* or (z_v = z* and v ≤ i*);
//   p_v = exp((z_v − max z)/τ) on S; inverse CDF in increasing index order: each thread sums a
//     contiguous chunk, thread 0 forms the exclusive prefix of the chunk sums in order, each
//     thread finds its first v with u·Σp < cumsum_v, the minimum wins; if none (rounding), the
//     last v with p_v > 0.
// Everything is deterministic (fixed-order reductions). p is f32 (the CPU uses f64): a token
// may differ only when u·Σp lies within f32 rounding of a CDF boundary.
// Not here: top-p, repetition penalties, stop tokens.

struct Params { B: u32, V: u32, seed: u32, stream: u32, step: u32, seq0: u32, k: u32, greedy: u32, invT: f32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<i32>;

override WG: u32 = 64u;
var<workgroup> redF: array<f32, WG>;
var<workgroup> redU: array<u32, WG>;
var<workgroup> kth: vec2u;            // (bitcast z*, i*)

// Is (za, ia) before (zb, ib) in the order (value desc, index asc)?
fn before(za: f32, ia: u32, zb: f32, ib: u32) -> bool {
  return za > zb || (za == zb && ia < ib);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let b = wid.x + wid.y * nwg.x;
  if (b >= P.B) { return; } // workgroup-uniform
  let off = b * P.V;

  // Best element per thread, then the tree: max value, lowest index on ties (also m = max z).
  var bz = -3.4028234663852886e38;
  var bi = 0xffffffffu;
  for (var v = tid; v < P.V; v += WG) {
    let z = logits[off + v];
    if (bi == 0xffffffffu || z > bz) { bz = z; bi = v; }
  }
  redF[tid] = bz;
  redU[tid] = bi;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) {
      let zo = redF[tid + s];
      let io = redU[tid + s];
      if (io != 0xffffffffu && (redU[tid] == 0xffffffffu || before(zo, io, redF[tid], redU[tid]))) {
        redF[tid] = zo;
        redU[tid] = io;
      }
    }
    workgroupBarrier();
  }
  let m = redF[0];
  let best = redU[0];
  workgroupBarrier();
  if (P.greedy != 0u) {
    if (tid == 0u) { out[b] = i32(best); }
    return;
  }

  // The k-th element of the order, when k < V.
  if (tid == 0u) { kth = vec2u(0u, P.V); }
  workgroupBarrier();
  if (P.k < P.V) {
    for (var v = tid; v < P.V; v += WG) {
      let z = logits[off + v];
      var rank = 0u;
      for (var w = 0u; w < P.V; w++) {
        if (before(logits[off + w], w, z, v)) { rank++; }
      }
      if (rank == P.k - 1u) { kth = vec2u(bitcast<u32>(z), v); }
    }
  }
  workgroupBarrier();
  let zk = bitcast<f32>(kth.x);
  let ik = kth.y;
  let keepAll = P.k >= P.V;

  // Contiguous chunk per thread: its sum of p.
  let L = (P.V + WG - 1u) / WG;
  let v0 = min(P.V, tid * L);
  let v1 = min(P.V, v0 + L);
  var cs = 0.0;
  var lastPos = 0xffffffffu;
  for (var v = v0; v < v1; v++) {
    let z = logits[off + v];
    if (keepAll || z > zk || (z == zk && v <= ik)) {
      let p = exp((z - m) * P.invT);
      cs += p;
      if (p > 0.0) { lastPos = v; }
    }
  }
  redF[tid] = cs;
  workgroupBarrier();
  if (tid == 0u) {
    var acc = 0.0;
    for (var t = 0u; t < WG; t++) {
      let x = redF[t];
      redF[t] = acc;
      acc += x;
    }
    kth.x = bitcast<u32>(acc); // total, shared through kth.x (the k-th value is no longer needed)
  }
  workgroupBarrier();
  let total = bitcast<f32>(kth.x);
  let r = philox4x32_10(vec4u(P.step, P.seq0 + b, 0u, 0u), vec2u(P.seed, P.stream));
  let goal = philox_uniform(r.x) * total;
  var acc = redF[tid];
  var hit = 0xffffffffu;
  for (var v = v0; v < v1; v++) {
    let z = logits[off + v];
    if (keepAll || z > zk || (z == zk && v <= ik)) {
      acc += exp((z - m) * P.invT);
      if (goal < acc) { hit = v; break; }
    }
  }
  workgroupBarrier();
  // First hit (min), and the fallback: last index with mass (max of lastPos, as i32 with -1 = none).
  redU[tid] = hit;
  redF[tid] = select(-1.0, f32(lastPos), lastPos != 0xffffffffu);
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) {
      redU[tid] = min(redU[tid], redU[tid + s]);
      redF[tid] = max(redF[tid], redF[tid + s]);
    }
    workgroupBarrier();
  }
  if (tid == 0u) {
    if (redU[0] != 0xffffffffu) {
      out[b] = i32(redU[0]);
    } else if (redF[0] >= 0.0) {
      out[b] = i32(redF[0]);
    } else {
      out[b] = i32(P.V) - 1;
    }
  }
}
