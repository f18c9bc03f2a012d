/**
 * WebGPU token embedding — thin wrappers over embedding.wgsl (forward) and two deterministic
 * backward kernels with the CPU's bits (ascending rows, no atomics): vocabulary-major
 * (embedding_backward.wgsl, O(V·N·C)) for the usual small vocabulary, token-major
 * (embedding_backward_tokens.wgsl, O(N²·C)) when there are fewer token rows than vocabulary rows,
 * as in src/model's pack/unpack scatter. The wrapper picks the one with less work unless told.
 * Twins: src/backend/cpu/embedding.ts, same arguments after the context; V = wte.length / C.
 *
 * Not here: token range checks (out of [0, V): a NaN row forward, skipped backward; the CPU twin
 * throws), the tied LM head (matmul.ts).
 */
import { checkEmbedding } from '../check';
import type { GpuContext, GpuTensor } from './kernel';
import { defineKernel, u32 } from './kernel';

const WG = 64;
const fwd = defineKernel({ shaders: 'embedding', bindings: ['rw', 'read', 'read'], overrides: { WG } });
const bwdVocab = defineKernel({ shaders: 'embedding_backward', bindings: ['rw', 'read', 'read'], overrides: { WG } });
const bwdTokens = defineKernel({ shaders: 'embedding_backward_tokens', bindings: ['rw', 'read', 'read'], overrides: { WG } });

/** Which backward kernel: the one with less work (N < V: token-major). */
export type EmbeddingBackwardKernel = 'vocab' | 'tokens';

/** out[b,t,:] = wte[tokens[b,t], :]. Overwrites `out`. */
export function embeddingForward(ctx: GpuContext, out: GpuTensor<'f32'>, tokens: GpuTensor<'i32'>, wte: GpuTensor<'f32'>, B: number, T: number, C: number): void {
  checkEmbedding('embeddingForward', 'out', out, tokens, B, T, C);
  const N = B * T;
  const V = Math.floor(wte.length / Math.max(1, C));
  ctx.run(fwd, [u32(N * C), u32(C), u32(V)], [out, tokens, wte], Math.ceil((N * C) / WG));
}

/** dwte[tokens[b,t], :] += dout[b,t,:]. Accumulates (deterministically, in ascending b·T + t). */
export function embeddingBackward(
  ctx: GpuContext,
  dwte: GpuTensor<'f32'>,
  dout: GpuTensor<'f32'>,
  tokens: GpuTensor<'i32'>,
  B: number,
  T: number,
  C: number,
  kernel?: EmbeddingBackwardKernel,
): void {
  checkEmbedding('embeddingBackward', 'dout', dout, tokens, B, T, C);
  const N = B * T;
  const V = Math.floor(dwte.length / Math.max(1, C));
  if (N === 0 || C === 0) return;
  if ((kernel ?? (N < V ? 'tokens' : 'vocab')) === 'tokens') {
    ctx.run(bwdTokens, [u32(N), u32(C), u32(V)], [dwte, dout, tokens], Math.ceil((N * C) / WG));
  } else {
    const cblocks = Math.ceil(C / WG);
    ctx.run(bwdVocab, [u32(N), u32(C), u32(V), u32(cblocks)], [dwte, dout, tokens], V * cblocks);
  }
}
