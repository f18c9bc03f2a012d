// kl_backward.wgsl — gradient of the exact per-state KL (twin: klBackward in
// src/backend/cpu/softmax.ts), accumulating:
//   dzp_v += dout_n · p_v ((lp_v − lq_v) − KL_n) / τ      (only where p_v > 0)
//   dzq_v += dout_n · (q_v − p_v) / τ
// One workgroup per row: the row's log-sum-exps and KL from kl_row.wgsl (tree reductions of
// reduce.wgsl, both concatenated before this file: deterministic), then an elementwise pass.
// Override HAS_P / HAS_Q (0 or 1) select which gradient is written; the wrapper binds a dummy
// buffer for the other.
// Not here: the forward (kl.wgsl).

struct Params { N: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> dzp: array<f32>;
@group(0) @binding(2) var<storage, read_write> dzq: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> zp: array<f32>;
@group(0) @binding(5) var<storage, read> zq: array<f32>;

override HAS_P: u32 = 1u;
override HAS_Q: u32 = 1u;

// The two rows, for kl_row.wgsl.
fn kl_logits(i: u32) -> vec2f { return vec2f(zp[i], zq[i]); }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let n = wid.x + wid.y * nwg.x;
  if (n >= P.N) { return; }
  let off = n * P.V;
  let lse = kl_row_lse(tid, off, P.V, P.invT);
  let g = dout[n] * P.invT;
  if (HAS_P != 0u) {
    let KL = kl_row_kl(tid, off, P.V, P.invT, lse);
    for (var v = tid; v < P.V; v += WG) {
      let l = kl_row_logp(off + v, P.invT, lse); // (lp_v, lq_v)
      let p = exp(l.x);
      if (p > 0.0) { dzp[off + v] = dzp[off + v] + g * p * (l.x - l.y - KL); }
    }
  }
  if (HAS_Q != 0u) {
    for (var v = tid; v < P.V; v += WG) {
      let l = kl_row_logp(off + v, P.invT, lse);
      let p = exp(l.x);
      let q = exp(l.y);
      dzq[off + v] = dzq[off + v] + g * (q - p);
    }
  }
}
