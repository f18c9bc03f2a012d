// clipped_loss_rows.wgsl — phase 1 of 3 of the clipped objective's gradient (twin:
// clippedLossBackward in src/backend/cpu/objective.ts): per step k, one workgroup,
//   rows[k] = (lseθ, lseref, u_k = lpθ[a_k] − lpref[a_k], KL_k = Σ_v p_v (lp_v − lq_v))
// with lp = log_softmax(zθ/τ), lq = log_softmax(zref/τ); the log-sum-exps and the KL are
// kl_row.wgsl's (tree reductions of reduce.wgsl, both concatenated before this file:
// deterministic). An action outside [0, V) gives u = NaN.
// Not here: the episode-level clipping (clipped_loss_coef.wgsl), the chain rule (clipped_loss_grad.wgsl).

struct Params { K: u32, V: u32, invT: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> zt: array<f32>;
@group(0) @binding(2) var<storage, read> zr: array<f32>;
@group(0) @binding(3) var<storage, read> actions: array<i32>;
@group(0) @binding(4) var<storage, read_write> rows: array<vec4f>;

// The two rows (θ, ref), for kl_row.wgsl.
fn kl_logits(i: u32) -> vec2f { return vec2f(zt[i], zr[i]); }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let k = wid.x + wid.y * nwg.x;
  if (k >= P.K) { return; }
  let off = k * P.V;
  let lse = kl_row_lse(tid, off, P.V, P.invT);
  let KL = kl_row_kl(tid, off, P.V, P.invT, lse);
  if (tid == 0u) {
    let a = actions[k];
    var u = bitcast<f32>(0x7fc00000u | P._pad); // NaN for a bad action (P._pad is 0)
    if (a >= 0 && u32(a) < P.V) {
      let l = kl_row_logp(off + u32(a), P.invT, lse);
      u = l.x - l.y;
    }
    rows[k] = vec4f(lse.x, lse.y, u, KL);
  }
}
