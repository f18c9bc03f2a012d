// embedding_backward.wgsl — dwte[v, c] += Σ_{n : tokens[n] = v} dout[n, c] (twin: embeddingBackward
// in src/backend/cpu/embedding.ts), accumulating, deterministic without atomics: one thread owns
// one element of dwte and adds its contributions in ascending n — the CPU twin's order, one f32
// rounding per add, so the result equals the CPU's bit for bit.
// Layout: a workgroup per (vocabulary row v, block of WG columns); the workgroup walks the tokens
// in chunks of WG staged in workgroup memory, and each thread scans the chunk for v. Cost
// O(V·N) compares per column block: right for the small vocabularies of this project (char or
// small word-piece); when N < V the wrapper uses embedding_backward_tokens.wgsl instead (same
// bits, O(N²) per column).
// Tokens outside [0, V) contribute nothing (the CPU twin throws).
// Not here: the forward (embedding.wgsl), the tied LM head's gradient (a matmul).

struct Params { N: u32, C: u32, V: u32, cblocks: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dwte: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> tokens: array<i32>;

override WG: u32 = 64u;
var<workgroup> toks: array<i32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let g = wid.x + wid.y * nwg.x;
  if (g >= P.V * P.cblocks) { return; } // workgroup-uniform: the barriers below stay uniform
  let v = i32(g / P.cblocks);
  let c = (g % P.cblocks) * WG + tid;
  let live = c < P.C;
  let o = u32(v) * P.C + min(c, P.C - 1u);
  var acc = 0.0;
  if (live) { acc = dwte[o]; }
  var hit = false;
  for (var n0 = 0u; n0 < P.N; n0 += WG) {
    let n = n0 + tid;
    toks[tid] = select(-1, tokens[min(n, P.N - 1u)], n < P.N);
    workgroupBarrier();
    let m = min(WG, P.N - n0);
    for (var j = 0u; j < m; j++) {
      if (toks[j] == v && live) {
        acc += dout[(n0 + j) * P.C + c];
        hit = true;
      }
    }
    workgroupBarrier();
  }
  if (live && hit) { dwte[o] = acc; }
}
