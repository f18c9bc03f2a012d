// embedding_backward_tokens.wgsl — dwte[v, c] += Σ_{n : tokens[n] = v} dout[n, c] (twin:
// embeddingBackward in src/backend/cpu/embedding.ts), accumulating, deterministic without
// atomics — the token-major twin of embedding_backward.wgsl, for when there are fewer token rows
// than vocabulary rows (N < V: a large table, or the model's pack/unpack scatter, where V is huge).
// One thread per (n, c): it works only if n is the FIRST row holding its token (it scans rows
// 0..n−1), and then adds every row n″ ≥ n holding that token, in ascending n″, onto dwte — the
// CPU's order, one f32 rounding per add, so the result equals the CPU's (and
// embedding_backward.wgsl's) bit for bit. Cost O(N²·C) compares, against O(V·N·C) for the
// vocabulary-major kernel; the wrapper picks the smaller.
// Tokens outside [0, V) contribute nothing (the CPU twin throws).
// Not here: the vocabulary-major kernel (embedding_backward.wgsl), the forward (embedding.wgsl).

struct Params { N: u32, C: u32, V: u32, _p0: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dwte: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> tokens: array<i32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.N * P.C) { return; }
  let n = i / P.C;
  let c = i % P.C;
  let tok = tokens[n];
  if (tok < 0 || u32(tok) >= P.V) { return; }
  for (var m = 0u; m < n; m++) {
    if (tokens[m] == tok) { return; } // an earlier row owns this token
  }
  let o = u32(tok) * P.C + c;
  var acc = dwte[o];
  for (var m = n; m < P.N; m++) {
    if (tokens[m] == tok) { acc += dout[m * P.C + c]; }
  }
  dwte[o] = acc;
}
