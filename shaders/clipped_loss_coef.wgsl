// clipped_loss_coef.wgsl — phase 2 of 3 of the clipped objective's gradient (twin:
// clippedLossBackward in src/backend/cpu/objective.ts): ONE workgroup computes, from the
// per-step rows of phase 1, each step's coefficient c_k = ∂L/∂u and the statistics:
//   sequence level (LEVEL 0): u_e = Σ_{k∈e} u_k (ascending k),  term_e = min(r_e Ã_e, clip(r_e) Ã_e),
//     surrogate = Σ_e w_e term_e / N,  c_k = w_e ∂term_e/∂u / N for e = episodeOf[k];
//     clipfrac over episodes that have steps;
//   token level (LEVEL 1): per step, norm = N·|e| (AGG 0, GRPO), max(1, K) (AGG 1, BNPO),
//     N·max(1, H) (AGG 2, Dr.GRPO);  c_k = w_e ∂term_k/∂u / norm;  clipfrac over steps;
//   a term is clipped when exp(clamp(u, logLo, logHi))·Ã < exp(u)·Ã (then ∂/∂u = 0, else r·Ã);
//   stats = (surrogate − β·klMean, surrogate, klMean = Σ_k KL_k / K, clipfrac).
// Threads stride over episodes / steps; sums are tree reductions in workgroup memory (no atomics,
// deterministic). ep holds per-episode values (dEp, or step counts) between the two passes.
// Not here: per-row softmax work (phases 1 and 3).

struct Params { K: u32, N: u32, H: f32, _p0: u32, logLo: f32, logHi: f32, beta: f32, _p1: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> rows: array<vec4f>;
@group(0) @binding(2) var<storage, read> episodeOf: array<i32>;
@group(0) @binding(3) var<storage, read> adv: array<f32>;
@group(0) @binding(4) var<storage, read> weight: array<f32>;
@group(0) @binding(5) var<storage, read_write> ep: array<f32>;
@group(0) @binding(6) var<storage, read_write> coef: array<f32>;
@group(0) @binding(7) var<storage, read_write> stats: array<f32>;

override WG: u32 = 64u;
override LEVEL: u32 = 0u;  // 0 sequence, 1 token
override AGG: u32 = 0u;    // token level: 0 grpo, 1 bnpo, 2 dr_grpo
var<workgroup> redF: array<vec2f, WG>;   // (surrogate, klSum)
var<workgroup> redU: array<vec2u, WG>;   // (clipped, terms)

struct Term { value: f32, dvdu: f32, clipped: bool }

fn clipped_term(u: f32, a: f32) -> Term {
  let unclipped = exp(u) * a;
  let clippedValue = exp(clamp(u, P.logLo, P.logHi)) * a;
  if (clippedValue < unclipped) { return Term(clippedValue, 0.0, true); }
  return Term(unclipped, unclipped, false);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32) {
  let Nf = f32(P.N);
  var sur = 0.0;
  var nClip = 0u;
  var nTerm = 0u;
  // Pass 1, per episode.
  for (var e = tid; e < P.N; e += WG) {
    var u = 0.0;
    var cnt = 0u;
    for (var k = 0u; k < P.K; k++) {
      if (u32(episodeOf[k]) == e) { u += rows[k].z; cnt++; }
    }
    if (LEVEL == 0u) {
      let t = clipped_term(u, adv[e]);
      sur += weight[e] * t.value / Nf;
      ep[e] = weight[e] * t.dvdu / Nf;
      if (cnt > 0u) {
        nTerm++;
        if (t.clipped) { nClip++; }
      }
    } else {
      ep[e] = f32(cnt);
    }
  }
  storageBarrier();
  workgroupBarrier();
  // Pass 2, per step.
  var kl = 0.0;
  for (var k = tid; k < P.K; k += WG) {
    let e = u32(episodeOf[k]);
    kl += rows[k].w;
    if (LEVEL == 0u) {
      coef[k] = ep[e];
    } else {
      var norm = Nf * max(1.0, P.H);
      if (AGG == 0u) { norm = Nf * ep[e]; }
      if (AGG == 1u) { norm = max(1.0, f32(P.K)); }
      let t = clipped_term(rows[k].z, adv[e]);
      sur += weight[e] * t.value / norm;
      coef[k] = weight[e] * t.dvdu / norm;
      nTerm++;
      if (t.clipped) { nClip++; }
    }
  }
  redF[tid] = vec2f(sur, kl);
  redU[tid] = vec2u(nClip, nTerm);
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) {
      redF[tid] = redF[tid] + redF[tid + s];
      redU[tid] = redU[tid] + redU[tid + s];
    }
    workgroupBarrier();
  }
  if (tid == 0u) {
    let surrogate = redF[0].x;
    let klMean = select(0.0, redF[0].y / f32(P.K), P.K > 0u);
    stats[0] = surrogate - P.beta * klMean;
    stats[1] = surrogate;
    stats[2] = klMean;
    stats[3] = select(0.0, f32(redU[0].x) / f32(redU[0].y), redU[0].y > 0u);
  }
}
