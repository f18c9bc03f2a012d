// embedding.wgsl — token embedding lookup: out[n, c] = wte[tokens[n], c] (twin: embeddingForward in
// src/backend/cpu/embedding.ts). One thread per output element (coalesced along c).
// A token outside [0, V) yields NaN in its row (the CPU twin throws; a kernel cannot).
// Not here: the backward (embedding_backward.wgsl), positions (RoPE, rope.wgsl).

struct Params { NC: u32, C: u32, V: u32, _p0: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> tokens: array<i32>;
@group(0) @binding(3) var<storage, read> wte: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + tid;
  if (i >= P.NC) { return; }
  let n = i / P.C;
  let c = i % P.C;
  let tok = tokens[n];
  if (tok < 0 || u32(tok) >= P.V) {
    out[i] = bitcast<f32>(0x7fc00000u | P._p0); // NaN (P._p0 is 0; a constant NaN is not valid WGSL)
    return;
  }
  out[i] = wte[u32(tok) * P.C + c];
}
