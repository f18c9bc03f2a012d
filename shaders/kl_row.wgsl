// kl_row.wgsl — the tempered log-softmaxes of a pair of logit rows (p, q) and their KL, one row
// per workgroup: a helper concatenated after reduce.wgsl and before the kernels that need them
// (kl.wgsl, kl_backward.wgsl, clipped_loss_rows.wgsl: shaders: ['reduce', 'kl_row', 'kl']), not
// a kernel. The CPU twins compute the same steps (klForward / klBackward in
// src/backend/cpu/softmax.ts, clippedLossBackward in src/backend/cpu/objective.ts).
// For the row of V elements at flat indices off … off + V − 1, with invT = 1/τ:
//   kl_row_lse(tid, off, V, invT)       lse = (log Σ_v exp(zp_v/τ), log Σ_v exp(zq_v/τ)), shifted
//                                        by the row maxima (a max tree, then a Σ tree, both rows at once);
//   kl_row_logp(i, invT, lse)           (lp_i, lq_i) = (zp_i, zq_i)/τ − lse of one element;
//   kl_row_kl(tid, off, V, invT, lse)   KL = Σ_v p_v (lp_v − lq_v), p_v = exp(lp_v), terms with
//                                        p_v = 0 contributing 0 (a Σ tree).
// Threads stride over v (v ≡ tid mod WG); the trees are reduce.wgsl's (deterministic).
// The kernel provides its two rows:  fn kl_logits(i: u32) -> vec2f  — (zp[i], zq[i]), read from
// its own bindings. Call from workgroup-uniform control flow.
// Not here: bindings, what a kernel does with lse and KL (the kernels).

fn kl_row_lse(tid: u32, off: u32, V: u32, invT: f32) -> vec2f {
  var m = vec2f(-3.4028234663852886e38);
  for (var v = tid; v < V; v += WG) { m = max(m, kl_logits(off + v) * invT); }
  m = wg_max2(tid, m);
  var s = vec2f(0.0);
  for (var v = tid; v < V; v += WG) { s += exp(kl_logits(off + v) * invT - m); }
  return m + log(wg_sum2(tid, s));
}

fn kl_row_logp(i: u32, invT: f32, lse: vec2f) -> vec2f {
  return kl_logits(i) * invT - lse;
}

fn kl_row_kl(tid: u32, off: u32, V: u32, invT: f32, lse: vec2f) -> f32 {
  var kl = 0.0;
  for (var v = tid; v < V; v += WG) {
    let l = kl_row_logp(off + v, invT, lse);
    let p = exp(l.x);
    if (p > 0.0) { kl += p * (l.x - l.y); }
  }
  return wg_sum(tid, kl);
}
