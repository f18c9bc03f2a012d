// kl.wgsl — exact per-state KL over the full vocabulary (twin: klForward in
// src/backend/cpu/softmax.ts):  out[n] = Σ_v p_v (lp_v − lq_v),  lp = log_softmax(zp/τ),
// lq = log_softmax(zq/τ); terms with p_v = 0 contribute 0.
// One workgroup per row; the log-sum-exps and the KL sum are kl_row.wgsl's (three tree
// reductions of reduce.wgsl, both concatenated before this file): deterministic, no atomics.
// WG (declared by reduce.wgsl) must be a power of two.
// Not here: the gradient (kl_backward.wgsl).

struct Params { N: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> zp: array<f32>;
@group(0) @binding(2) var<storage, read> zq: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

// The two rows, for kl_row.wgsl.
fn kl_logits(i: u32) -> vec2f { return vec2f(zp[i], zq[i]); }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; }
  let off = n * P.V;
  let lse = kl_row_lse(tid, off, P.V, P.invT);
  let total = kl_row_kl(tid, off, P.V, P.invT, lse);
  if (tid == 0u) { out[n] = total; }
}
