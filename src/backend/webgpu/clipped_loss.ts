/**
 * WebGPU gradient of SAT's clipped objective w.r.t. the policy's logits, with the exact
 * full-vocabulary KL penalty — thin wrapper over three shaders, recorded back to back:
 *   shaders/clipped_loss_rows.wgsl  per step: log-sum-exps, log-ratio u_k of the action, KL_k
 *   shaders/clipped_loss_coef.wgsl  one workgroup: clipping per episode (sequence level) or per
 *                                   step (token level: GRPO / BNPO / Dr.GRPO), c_k, stats[4]
 *   shaders/clipped_loss_grad.wgsl  per step: dlogits += scale/τ (c_k (1[v=a] − p) − β/K ∂KL)
 * Twin: clippedLossBackward in src/backend/cpu/objective.ts — same arguments after the
 * context, same semantics (dlogits ACCUMULATES scale·∂L/∂z; stats ← objective, surrogate,
 * klMean, clipfrac). The CPU computes in f64, the GPU in f32: the statistics agree to ~1e-6
 * relative and a clip decision can only differ for a ratio within f32 rounding of 1 ± ε.
 *
 * Not here: advantages, where the logits come from, the optimizer; value checks (actions and
 * episodes out of range give NaN / are ignored — the CPU twin throws).
 */
import type { ClippedLossSpec } from '../types';
import { checkClippedLoss } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, f32, u32 } from './kernel';
import { ROW_WG } from './logsoftmax';

const rowsK = defineKernel({ shaders: ['reduce', 'kl_row', 'clipped_loss_rows'], bindings: ['read', 'read', 'read', 'rw'], overrides: { WG: ROW_WG } });
const coefK = (level: 0 | 1, agg: 0 | 1 | 2) =>
  defineKernel({ shaders: 'clipped_loss_coef', bindings: ['read', 'read', 'read', 'read', 'rw', 'rw', 'rw'], overrides: { WG: 64, LEVEL: level, AGG: agg } });
const gradK = defineKernel({ shaders: 'clipped_loss_grad', bindings: ['read', 'read', 'read', 'read', 'read', 'rw'], overrides: { WG: ROW_WG } });

/** dlogits += scale · ∂L/∂z_θ; stats[0..4) ← (objective, surrogate, klMean, clipfrac). */
export function clippedLossBackward(
  ctx: GpuContext,
  dlogits: GpuTensor<'f32'>,
  stats: GpuTensor<'f32'>,
  logitsTheta: GpuTensor<'f32'>,
  logitsRef: GpuTensor<'f32'>,
  actions: GpuTensor<'i32'>,
  episodeOf: GpuTensor<'i32'>,
  adv: GpuTensor<'f32'>,
  weight: GpuTensor<'f32'>,
  K: number,
  V: number,
  N: number,
  horizon: number,
  temperature: number,
  spec: ClippedLossSpec,
  scale = 1,
): void {
  checkClippedLoss({ dlogits, stats, logitsTheta, logitsRef, actions, episodeOf, adv, weight }, K, V, N, temperature);
  const invT = 1 / temperature;
  const rows = ctx.zeros('f32', 4 * K);
  const ep = ctx.zeros('f32', N);
  const coef = ctx.zeros('f32', K);
  ctx.run(rowsK, [u32(K), u32(V), f32(invT)], [logitsTheta, logitsRef, actions, rows], K);
  const level = spec.level === 'sequence' ? 0 : 1;
  const agg = spec.tokenAgg === 'grpo' ? 0 : spec.tokenAgg === 'bnpo' ? 1 : 2;
  ctx.run(
    coefK(level, agg),
    [u32(K), u32(N), f32(horizon), u32(0), f32(Math.log(1 - spec.epsLow)), f32(Math.log(1 + spec.epsHigh)), f32(spec.beta)],
    [rows, episodeOf, adv, weight, ep, coef, stats],
    1,
  );
  ctx.run(gradK, [u32(K), u32(V), f32(invT), f32(scale * invT), f32(K > 0 ? spec.beta / K : 0)], [logitsTheta, logitsRef, actions, rows, coef, dlogits], K);
  // Later ops are recorded after these, so the scratch buffers may be reused by them.
  ctx.dispose(rows);
  ctx.dispose(ep);
  ctx.dispose(coef);
}
