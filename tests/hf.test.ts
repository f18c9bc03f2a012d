/**
 * Tests for bringing a Hugging Face Llama checkpoint as an agent (src/model/hfConfig.ts,
 * hfLoad.ts, hfTokenizer.ts), on tiny random checkpoints written in the HF layout by
 * tests/helpers/hfCheckpoint.ts — nothing is downloaded:
 *   (a) the loader's tensors against the written ones: copied exactly, q/k rows permuted from
 *       rotate-half to our interleaved pairs, K/V heads repeated group-wise, BF16/F16 converted;
 *   (b) known-answer logits: Model.forward (cpuBackend, f32) on the loaded weights against an f64
 *       HF Llama written here from the documented formulas (RMSNorm with eps, rotate-half RoPE,
 *       repeat_kv head sharing, SwiGLU, tied or untied head) — GQA and not, tied and untied, F32,
 *       BF16 and F16, one file and sharded — with negative controls (the reference with
 *       interleaved RoPE, or with K/V heads shared modulo instead of by group, must miss by far);
 *       Q8 / Q4 on load: stored as quantizeQ8/Q4 of the f32 load, logits near the f32 ones;
 *   (d) the tokenizer's round trip on the tasks' prompts and contexts (plain and chat turns);
 *   every malformed folder and refused option with its own message; the memory refusal before
 *   any tensor is read; cancel; CPU LoRA training on the Q8 base lowers the loss; an HF agent
 *   seated in a language team (LmEnv) prompted with its own tokenizer.
 * (c), the ONNX export of a loaded model run by onnxruntime-web, is tests/hf-onnx.test.ts.
 *
 * Tolerance of (b): max |ours − ref| / max |ref| ≤ 1e-4 — ours is f32 (dot products summed in
 * f64 and rounded once per op), the reference f64 throughout, so the expected gap is ~1e-6; a
 * wrong RoPE layout or head map moves logits by O(1) relative (the negative controls measure it).
 */
import { describe, expect, it } from 'vitest';
import { cpuBackend } from '../src/backend/cpu';
import { ConfigError, FormatError } from '../src/core/errors';
import { Rng } from '../src/core/rng';
import { estimateMemory, parseHfConfig } from '../src/model/hfConfig';
import { hfFolderHash, loadHfCheckpoint, type HfFiles, type HfModel } from '../src/model/hfLoad';
import { HfTokenizer } from '../src/model/hfTokenizer';
import { trainOnSequences } from '../src/model/loss';
import { Model } from '../src/model/model';
import { dequantizeQ4, dequantizeQ8, quantizeQ4, quantizeQ8 } from '../src/model/quant';
import { dequantizeTensor, initWeights, type WeightTensor } from '../src/model/weights';
import { modelConfig } from '../src/model/config';
import { tokenizer as charTokenizer } from '../src/model/tokenizer';
import { LmAgent } from '../src/sat/agents/lm';
import { LmEnv } from '../src/sat/env/lm';
import { cleanMessage, makeLlmTask, nextTurn, type LlmTaskName } from '../src/tasks/llm';
import { CHAT_TEMPLATE, hfCheckpoint, tinyTokenizerJson, SPECIAL, type HfCheckpoint, type HfSpec } from './helpers/hfCheckpoint';

const TOL = 1e-4;

// ------------------------------------------------------------------ the f64 reference (HF Llama)

interface RefOptions {
  /** 'half': HF's rotate-half pairs (i, i + HS/2); 'interleaved' (negative control): pairs (2i, 2i+1). */
  readonly rope?: 'half' | 'interleaved';
  /** 'group': query head h reads K/V head ⌊h/g⌋ (repeat_kv); 'modulo' (negative control): h mod KV. */
  readonly kv?: 'group' | 'modulo';
}

/** logits [T × V] of one sequence, straight from the HF tensors and config, in f64. */
function hfReference(ck: HfCheckpoint, tokens: readonly number[], o: RefOptions = {}): Float64Array {
  const c = (k: string): number => ck.config[k] as number;
  const V = c('vocab_size'), D = c('hidden_size'), H = c('intermediate_size'), L = c('num_hidden_layers');
  const NH = c('num_attention_heads'), KV = c('num_key_value_heads'), HS = D / NH, eps = c('rms_norm_eps'), theta = c('rope_theta');
  const W = (n: string): Float32Array => ck.tensors.get(n)!.data;
  const T = tokens.length;
  const matvec = (w: Float32Array, x: Float64Array, rows: number, cols: number): Float64Array => {
    const y = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let s = 0;
      for (let k = 0; k < cols; k++) s += w[r * cols + k]! * x[k]!;
      y[r] = s;
    }
    return y;
  };
  const rmsnorm = (x: Float64Array, g: Float32Array): Float64Array => {
    let ms = 0;
    for (const v of x) ms += v * v;
    const r = 1 / Math.sqrt(ms / x.length + eps);
    return x.map((v, i) => v * r * g[i]!);
  };
  const rope = (x: Float64Array, heads: number, pos: number): Float64Array => {
    const y = new Float64Array(x.length);
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < HS / 2; i++) {
        const phi = pos * Math.pow(theta, (-2 * i) / HS);
        const [a, b] = o.rope === 'interleaved' ? [h * HS + 2 * i, h * HS + 2 * i + 1] : [h * HS + i, h * HS + i + HS / 2];
        y[a] = x[a]! * Math.cos(phi) - x[b]! * Math.sin(phi);
        y[b] = x[b]! * Math.cos(phi) + x[a]! * Math.sin(phi);
      }
    }
    return y;
  };
  const E = W('model.embed_tokens.weight');
  let xs = tokens.map((t) => Float64Array.from(E.subarray(t * D, (t + 1) * D)));
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}`;
    const hs = xs.map((x) => rmsnorm(x, W(`${p}.input_layernorm.weight`)));
    const q = hs.map((h, t) => rope(matvec(W(`${p}.self_attn.q_proj.weight`), h, D, D), NH, t));
    const k = hs.map((h, t) => rope(matvec(W(`${p}.self_attn.k_proj.weight`), h, KV * HS, D), KV, t));
    const v = hs.map((h) => matvec(W(`${p}.self_attn.v_proj.weight`), h, KV * HS, D));
    const att = xs.map(() => new Float64Array(D));
    for (let h = 0; h < NH; h++) {
      const j = o.kv === 'modulo' ? h % KV : Math.floor(h / (NH / KV));
      for (let t = 0; t < T; t++) {
        const s = new Float64Array(t + 1);
        for (let u = 0; u <= t; u++) {
          let dot = 0;
          for (let i = 0; i < HS; i++) dot += q[t]![h * HS + i]! * k[u]![j * HS + i]!;
          s[u] = dot / Math.sqrt(HS);
        }
        const m = Math.max(...s);
        const e = s.map((z) => Math.exp(z - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let u = 0; u <= t; u++) for (let i = 0; i < HS; i++) att[t]![h * HS + i]! += (e[u]! / z) * v[u]![j * HS + i]!;
      }
    }
    xs = xs.map((x, t) => {
      const a = matvec(W(`${p}.self_attn.o_proj.weight`), att[t]!, D, D);
      const mid = x.map((xi, i) => xi + a[i]!);
      const h2 = rmsnorm(mid, W(`${p}.post_attention_layernorm.weight`));
      const gate = matvec(W(`${p}.mlp.gate_proj.weight`), h2, H, D);
      const up = matvec(W(`${p}.mlp.up_proj.weight`), h2, H, D);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]!);
      const down = matvec(W(`${p}.mlp.down_proj.weight`), act, D, H);
      return mid.map((mi, i) => mi + down[i]!);
    });
  }
  const head = ck.config.tie_word_embeddings ? E : W('lm_head.weight');
  const out = new Float64Array(T * V);
  xs.forEach((x, t) => out.set(matvec(head, rmsnorm(x, W('model.norm.weight')), V, D), t * V));
  return out;
}

function relDiff(ours: ArrayLike<number>, ref: ArrayLike<number>): number {
  let d = 0;
  let m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(ours[i]! - ref[i]!));
    m = Math.max(m, Math.abs(ref[i]!));
  }
  return d / m;
}

/** Model.forward logits for B random sequences vs the reference; returns the relative error and the sequences. */
function logitsVsReference(ck: HfCheckpoint, m: HfModel, o: RefOptions = {}, B = 2, T = 9): number {
  const V = m.cfg.vocab;
  const r = new Rng(3, [B, T]);
  const tokens = Int32Array.from({ length: B * T }, () => r.int(V));
  const model = new Model(cpuBackend, m.cfg, m.weights, { trainable: 'none' });
  const ours = model.forward(tokens, B, T).slice(0, B * T * V);
  let worst = 0;
  for (let b = 0; b < B; b++) {
    const ref = hfReference(ck, [...tokens.subarray(b * T, (b + 1) * T)], o);
    worst = Math.max(worst, relDiff(ours.subarray(b * T * V, (b + 1) * T * V), ref));
  }
  model.dispose();
  return worst;
}

const VARIANTS: [string, HfSpec][] = [
  ['GQA (4 heads / 2 KV), untied, F32, one file', { kvHeads: 2, tied: false, dtype: 'F32' }],
  ['MHA (4 / 4), tied, BF16, 3 shards', { kvHeads: 4, tied: true, dtype: 'BF16', shards: 3 }],
  ['GQA (4 / 1), tied, F16, 2 shards, θ 500000, eps 1e-6', { kvHeads: 1, tied: true, dtype: 'F16', shards: 2, ropeTheta: 500000, eps: 1e-6 }],
];

// ------------------------------------------------------------------ (a) tensors

describe('loader tensors (a)', () => {
  it.each(VARIANTS)('%s: every tensor is the written one, q/k rows in our RoPE order, K/V heads repeated by group', async (_label, spec) => {
    const ck = hfCheckpoint(spec);
    const m = await loadHfCheckpoint(ck.files);
    const { d, heads, layers } = m.cfg;
    const KV = spec.kvHeads!;
    const HS = d / heads;
    const g = heads / KV;
    expect(m.cfg.tied).toBe(spec.tied);
    expect(m.info.kvHeads).toBe(KV);
    const f32 = (name: string): Float32Array => (m.weights.get(name) as { data: Float32Array }).data;
    const hf = (name: string): Float32Array => ck.tensors.get(name)!.data;
    expect(f32('tok_emb')).toEqual(hf('model.embed_tokens.weight'));
    expect(f32('final_norm')).toEqual(hf('model.norm.weight'));
    if (!spec.tied) expect(f32('lm_head')).toEqual(hf('lm_head.weight'));
    else expect(m.weights.has('lm_head')).toBe(false);
    const row = (w: Float32Array, r: number): Float32Array => w.subarray(r * d, (r + 1) * d);
    for (let l = 0; l < layers; l++) {
      const p = `model.layers.${l}`;
      expect(f32(`layers.${l}.attn_norm`)).toEqual(hf(`${p}.input_layernorm.weight`));
      expect(f32(`layers.${l}.mlp_norm`)).toEqual(hf(`${p}.post_attention_layernorm.weight`));
      expect(f32(`layers.${l}.wo`)).toEqual(hf(`${p}.self_attn.o_proj.weight`));
      expect(f32(`layers.${l}.w1`)).toEqual(hf(`${p}.mlp.gate_proj.weight`));
      expect(f32(`layers.${l}.w3`)).toEqual(hf(`${p}.mlp.up_proj.weight`));
      expect(f32(`layers.${l}.w2`)).toEqual(hf(`${p}.mlp.down_proj.weight`));
      expect(m.weights.get(`layers.${l}.wk`)!.shape).toEqual([d, d]);
      for (let h = 0; h < heads; h++) {
        for (let i = 0; i < HS / 2; i++) {
          for (const [ours, theirs] of [[2 * i, i], [2 * i + 1, i + HS / 2]] as const) {
            expect(row(f32(`layers.${l}.wq`), h * HS + ours)).toEqual(row(hf(`${p}.self_attn.q_proj.weight`), h * HS + theirs));
            expect(row(f32(`layers.${l}.wk`), h * HS + ours)).toEqual(row(hf(`${p}.self_attn.k_proj.weight`), Math.floor(h / g) * HS + theirs));
          }
        }
        for (let i = 0; i < HS; i++) expect(row(f32(`layers.${l}.wv`), h * HS + i)).toEqual(row(hf(`${p}.self_attn.v_proj.weight`), Math.floor(h / g) * HS + i));
      }
    }
  });

  it('BF16 and F16 values are converted exactly (the written bits, widened)', async () => {
    for (const dtype of ['BF16', 'F16'] as const) {
      const ck = hfCheckpoint({ dtype, kvHeads: 4, tied: true });
      const m = await loadHfCheckpoint(ck.files);
      const got = (m.weights.get('tok_emb') as { data: Float32Array }).data;
      expect(got).toEqual(ck.tensors.get('model.embed_tokens.weight')!.data);
      // The values are really rounded (not f32 in disguise): some differ from an f32 draw's low bits.
      expect(got.some((x) => new Uint32Array(new Float32Array([x]).buffer)[0]! % 65536 !== 0)).toBe(dtype === 'F16');
    }
  });
});

// ------------------------------------------------------------------ (b) logits

describe('known-answer logits (b)', () => {
  const measured: string[] = [];
  it.each(VARIANTS)('%s: Model.forward = f64 HF Llama within 1e-4', async (label, spec) => {
    const ck = hfCheckpoint(spec);
    const m = await loadHfCheckpoint(ck.files);
    const rel = logitsVsReference(ck, m);
    measured.push(`${label}: rel ${rel.toExponential(2)}`);
    expect(rel).toBeLessThanOrEqual(TOL);
  });

  it('negative controls: interleaved RoPE in the reference, or K/V heads shared modulo, miss by far more than the tolerance', async () => {
    const ck = hfCheckpoint({ kvHeads: 2, heads: 4 });
    const m = await loadHfCheckpoint(ck.files);
    const rope = logitsVsReference(ck, m, { rope: 'interleaved' });
    const kv = logitsVsReference(ck, m, { kv: 'modulo' });
    console.log(`HF logits vs f64 reference: ${measured.join('; ')}; controls: interleaved RoPE ${rope.toExponential(2)}, K/V modulo ${kv.toExponential(2)}`);
    expect(rope).toBeGreaterThan(100 * TOL);
    expect(kv).toBeGreaterThan(100 * TOL);
  });

  it('quantize on load: Q8/Q4 matrices are quantizeQ8/Q4 of the f32 load; norms stay f32; logits near the f32 ones', async () => {
    const ck = hfCheckpoint({ kvHeads: 2 });
    const f = await loadHfCheckpoint(ck.files);
    const rels: Record<string, number> = {};
    for (const quant of ['q8', 'q4'] as const) {
      const q = await loadHfCheckpoint(ck.files, { quant });
      for (const [name, t] of q.weights) {
        const src = (f.weights.get(name) as { data: Float32Array }).data;
        if (t.shape.length === 1) {
          expect(t.dtype).toBe('f32');
          continue;
        }
        expect(t.dtype, name).toBe(quant);
        const [O, C] = t.shape as [number, number];
        const want = quant === 'q8' ? dequantizeQ8(quantizeQ8(src, O, C), O, C) : dequantizeQ4(quantizeQ4(src, O, C), O, C);
        expect(dequantizeTensor(t as WeightTensor)).toEqual(want);
      }
      rels[quant] = logitsVsReference(ck, q);
    }
    console.log(`quantized on load vs the f64 reference: q8 ${rels.q8!.toExponential(2)}, q4 ${rels.q4!.toExponential(2)}`);
    // Q8's ~0.4 % per-weight error and Q4's ~7 % move the logits by a little, never by O(1).
    expect(rels.q8!).toBeGreaterThan(TOL);
    expect(rels.q8!).toBeLessThan(0.05);
    expect(rels.q4!).toBeGreaterThan(rels.q8!);
    expect(rels.q4!).toBeLessThan(0.5);
  });

  it('maxSeq is min(max_position_embeddings, the option), and generate runs on the loaded model', async () => {
    const ck = hfCheckpoint({ maxPositions: 40 });
    expect((await loadHfCheckpoint(ck.files)).cfg.maxSeq).toBe(40);
    const m = await loadHfCheckpoint(ck.files, { maxSeq: 24 });
    expect(m.cfg.maxSeq).toBe(24);
    const model = new Model(cpuBackend, m.cfg, m.weights, { trainable: 'none' });
    const r = await model.generate([Int32Array.of(1, 2, 3)], { maxNew: 5, temperature: 0, topK: 0, seed: 1, stream: 0, stop: m.tokenizer.eos });
    expect(r.tokens[0]!.length + (r.stopped[0] ? 1 : 0)).toBeGreaterThan(0);
    // Greedy decoding = argmax of the plain forward at each step (KV cache and RoPE positions agree).
    const seq = Int32Array.from([1, 2, 3, ...r.tokens[0]!]);
    const z = model.forward(seq, 1, seq.length);
    for (let k = 0; k < r.tokens[0]!.length; k++) {
      const rowAt = z.subarray((2 + k) * m.cfg.vocab, (3 + k) * m.cfg.vocab);
      expect(rowAt.indexOf(Math.max(...rowAt))).toBe(r.tokens[0]![k]);
    }
    model.dispose();
  });
});

// ------------------------------------------------------------------ training

describe('LoRA on the CPU over a checkpoint quantized on load', () => {
  it('next-token training of LoRA adapters over the Q8 base lowers the loss on a repeated sequence', async () => {
    const m = await loadHfCheckpoint(hfCheckpoint({ kvHeads: 2 }).files, { quant: 'q8' });
    const model = new Model(cpuBackend, m.cfg, m.weights, { trainable: 'lora', lora: { rank: 4, alpha: 8 }, seed: 1 });
    const seq = m.tokenizer.encode('what is 12+7? the answer is 19. what is 12+7? the answer is 19.', false);
    const tokens = Int32Array.from(seq);
    const first = await trainOnSequences(model, tokens, 1, tokens.length, { lr: 1e-2 });
    let last = first;
    for (let i = 0; i < 15; i++) last = await trainOnSequences(model, tokens, 1, tokens.length, { lr: 1e-2 });
    console.log(`LoRA r4 over Q8: loss ${first.toFixed(3)} → ${last.toFixed(3)} after 16 steps`);
    expect(last).toBeLessThan(0.7 * first);
    model.dispose();
  });
});

// ------------------------------------------------------------------ (d) tokenizer

const TASKS: LlmTaskName[] = ['arithmetic', 'countdown'];

describe('tokenizer (d)', () => {
  it('round-trips every task prompt and turn context, in plain and chat turns', async () => {
    const chat = (await loadHfCheckpoint(hfCheckpoint({ chat: true }).files)).tokenizer;
    const plain = (await loadHfCheckpoint(hfCheckpoint({ chat: false }).files)).tokenizer;
    expect(chat.turns).toBe('chat');
    expect(plain.turns).toBe('plain');
    let n = 0;
    for (const name of TASKS) {
      const task = makeLlmTask(name, { seed: 1, level: 2 });
      for (let i = 0; i < 25; i++) {
        const p = task.generate(i % 2 === 0 ? 'train' : 'heldout', i);
        for (const tk of [chat, plain]) {
          expect(tk.decode(tk.encode(p.prompt, false))).toBe(p.prompt);
          expect(tk.decode(tk.encode(p.answer, false))).toBe(p.answer);
        }
        const spec = { protocol: 'chain' as const, nAgents: 3, sample: 0 };
        const earlier = [{ turn: 0, agent: 0, text: ` ${p.answer}` }];
        const ctx = nextTurn(spec, p, earlier)[0]!.context;
        expect(ctx).toContain('<a1>');
        for (const tk of [chat, plain]) {
          const ids = tk.encodeContext(ctx);
          expect(tk.decode(ids, true)).toBe(tk.renderContext(ctx));
        }
        expect(plain.renderContext(ctx)).toBe(`${p.prompt}\nagent 0: ${p.answer}\nagent 1:`);
        expect(chat.renderContext(ctx)).toBe(`<|im_start|>user\n${p.prompt}\nagent 0:  ${p.answer}<|im_end|>\n<|im_start|>assistant\n`);
        n++;
      }
    }
    expect(n).toBe(50);
    // A message that ended at once (eos first) is the empty text.
    expect(chat.decodeMessage(new Int32Array(0))).toBe('');
  });

  it('the char tokenizer fits a teammate\'s foreign text into its alphabet (lowered, the rest dropped); its own contexts are unchanged', () => {
    expect(charTokenizer.encodeContext('what is 1+2?<a0>Héllo <b>\u0006 3<sep><a1>')).toEqual(charTokenizer.encode('what is 1+2?<a0>hllo b> 3<sep><a1>', { bos: true }));
    const ctx = nextTurn({ protocol: 'chain', nAgents: 2, sample: 0 }, makeLlmTask('arithmetic', { seed: 1, level: 1 }).generate('train', 0), [{ turn: 0, agent: 0, text: '12' }])[0]!.context;
    expect(charTokenizer.encodeContext(ctx)).toEqual(charTokenizer.encode(ctx, { bos: true }));
  });

  it('plain turns keep the tokenizer\'s own BOS (as tokenizer(text) does); chat turns add none (the template writes its own)', () => {
    const info = { bosTokenId: 261, eosTokenId: 261 };
    const plain = new HfTokenizer(tinyTokenizerJson({ bos: true }), { info, turns: 'plain' });
    expect(plain.encodeContext('1+2=<a0>')).toEqual([261, ...plain.encode('1+2=\nagent 0:', false)]);
    const chat = new HfTokenizer(tinyTokenizerJson({ bos: true }), { info, tokenizerConfig: { eos_token: '<|im_end|>', chat_template: CHAT_TEMPLATE } });
    expect(chat.encodeContext('1+2=<a0>')[0]).toBe(262); // <|im_start|>, not a BOS
  });

  it('the end of a message: the chat template\'s eos_token, else generation_config / config.json eos_token_id', async () => {
    expect((await loadHfCheckpoint(hfCheckpoint({ chat: true }).files)).tokenizer.eos).toBe(256 + 5 + SPECIAL.indexOf('<|im_end|>'));
    expect((await loadHfCheckpoint(hfCheckpoint({ chat: false }).files)).tokenizer.eos).toBe(261);
    expectMessage(() => new HfTokenizer(tinyTokenizerJson(), {}), FormatError, 'no end-of-sequence token');
    expectMessage(() => new HfTokenizer(tinyTokenizerJson(), { info: { bosTokenId: null, eosTokenId: 261 }, turns: 'chat' }), FormatError, 'has no "chat_template"');
    expectMessage(() => new HfTokenizer(tinyTokenizerJson(), { info: { bosTokenId: null, eosTokenId: 261 }, tokenizerConfig: { chat_template: '{% for %}' } }), FormatError, '"chat_template" does not parse');
    expectMessage(() => new HfTokenizer({ version: '1.0' }), FormatError, 'tokenizer.json: has no "model"');
  });
});

// ------------------------------------------------------------------ the team

describe('an HF agent in a language team', () => {
  it('LmEnv prompts it with its own tokenizer (chat turns), ends its messages at its eos, and its char-tokenizer teammate is unchanged', async () => {
    const m = await loadHfCheckpoint(hfCheckpoint({ kvHeads: 2, maxPositions: 128 }).files, { quant: 'q8' });
    const hfAgent = new LmAgent(1, new Model(cpuBackend, m.cfg, m.weights, { trainable: 'lora', lora: { rank: 2, alpha: 4 }, seed: 2 }), { name: 'hf', tokenizer: m.tokenizer });
    const charCfg = modelConfig({ vocab: 64, d: 32, layers: 1, heads: 2, hidden: 32, maxSeq: 128 });
    const charAgent = new LmAgent(0, new Model(cpuBackend, charCfg, initWeights(charCfg, new Rng(1)), { trainable: 'full' }), { name: 'char' });
    const task = makeLlmTask('arithmetic', { seed: 1, level: 1 });
    const env = new LmEnv(task, 'chain', 2, { maxNew: 4, evalEpisodes: 2, evalSeed: 1 });
    const batch = await env.rollout([charAgent, hfAgent], 2, 2, new Rng(9));
    const ctx = batch.context as { seqs: Int32Array[] };
    const ep = env.lastEpisodes[0]!;
    // Agent 1's sequence: its chat-rendered context (which shows agent 0's message) + its message.
    const mine = batch.episodes[0]!.turns.filter((t) => t.agent === 1);
    expect(mine.length).toBeGreaterThan(0);
    const seq = ctx.seqs[(batch.context as { stepSeq: Int32Array }).stepSeq[mine[0]!.obs]!]!;
    const want = m.tokenizer.encodeContext(`${ep.problem.prompt}<a0>${cleanMessage(ep.messages[0]!.text)}<sep><a1>`);
    expect([...seq.subarray(0, want.length)]).toEqual(want);
    expect(m.tokenizer.decode(want, true)).toContain('<|im_start|>assistant\n');
    // Every logp is finite (each agent scores its own tokens), and agent 0's context is char-encoded.
    for (const e of batch.episodes) for (const t of e.turns) expect(Number.isFinite(t.logp)).toBe(true);
    const zero = batch.episodes[0]!.turns.find((t) => t.agent === 0)!;
    const zseq = ctx.seqs[(batch.context as { stepSeq: Int32Array }).stepSeq[zero.obs]!]!;
    expect(zseq[0]).toBe(1); // <bos> of the char tokenizer
    expect(Math.max(...zseq)).toBeLessThan(64);
  });

  it('a tokenizer larger than the model\'s vocabulary is refused when the agent is built', () => {
    const cfg = modelConfig({ vocab: 64, d: 32, layers: 1, heads: 2, hidden: 32, maxSeq: 16 });
    const tk = new HfTokenizer(tinyTokenizerJson(), { info: { bosTokenId: null, eosTokenId: 261 } });
    expectMessage(() => new LmAgent(0, new Model(cpuBackend, cfg, initWeights(cfg, new Rng(1)), { trainable: 'none' }), { tokenizer: tk }), ConfigError, 'its tokenizer has 264 ids but its model\'s vocabulary is 64');
  });
});

// ------------------------------------------------------------------ refusals

function expectMessage(f: () => unknown, cls: new (...a: never[]) => Error, part: string): Error {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err, `expected ${cls.name} containing ${JSON.stringify(part)}`).toBeInstanceOf(cls);
  expect((err as Error).message).toContain(part);
  return err as Error;
}

async function loadError(files: HfFiles, opts: Parameters<typeof loadHfCheckpoint>[1] = {}): Promise<Error> {
  try {
    await loadHfCheckpoint(files, opts);
  } catch (e) {
    return e as Error;
  }
  throw new Error('the load succeeded; a refusal was expected');
}

function without(files: HfFiles, name: string): Map<string, Uint8Array> {
  const m = new Map(files);
  m.delete(name);
  return m;
}

describe('malformed folders and refused options: each its own message', () => {
  const base = hfCheckpoint({ kvHeads: 2 });
  const sharded = hfCheckpoint({ kvHeads: 2, shards: 2 });
  const cases: [string, () => HfFiles, typeof FormatError | typeof ConfigError, string][] = [
    ['missing config.json', () => without(base.files, 'config.json'), FormatError, '"config.json" is missing'],
    ['missing model.safetensors', () => without(base.files, 'model.safetensors'), FormatError, '"model.safetensors" is missing'],
    ['missing tokenizer.json', () => without(base.files, 'tokenizer.json'), FormatError, '"tokenizer.json" is missing'],
    ['config.json not JSON', () => new Map(base.files).set('config.json', new TextEncoder().encode('{ "model_type": ')), FormatError, '"config.json" is not valid JSON'],
    ['a shard the index names is missing', () => without(sharded.files, 'model-00002-of-00002.safetensors'), FormatError, 'shard "model-00002-of-00002.safetensors" is missing (model.safetensors.index.json puts tensor'],
    ['a missing tensor', () => hfCheckpoint({ kvHeads: 2, mutate: (t) => t.delete('model.layers.1.mlp.up_proj.weight') }).files, FormatError, 'tensor "model.layers.1.mlp.up_proj.weight" (shape [96, 64]) is missing'],
    ['a shape mismatch', () => hfCheckpoint({ kvHeads: 2, config: { intermediate_size: 128 } }).files, FormatError, 'tensor "model.layers.0.mlp.gate_proj.weight" has shape [96, 64] but config.json implies [128, 64]'],
    ['K/V rows for the wrong number of K/V heads', () => hfCheckpoint({ kvHeads: 2, config: { num_key_value_heads: 4 } }).files, FormatError, 'tensor "model.layers.0.self_attn.k_proj.weight" has shape [32, 64] but config.json implies [64, 64]'],
    ['a wrong dtype', () => hfCheckpoint({ mutate: (t) => t.set('model.norm.weight', { dtype: 'F64', shape: [64], data: new Float64Array(64).fill(1) }) }).files, FormatError, 'tensor "model.norm.weight" has dtype F64; supported: F32, F16, BF16'],
    ['truncated tensor data', () => new Map(base.files).set('model.safetensors', base.files.get('model.safetensors')!.slice(0, -100)), FormatError, 'model.safetensors: safetensors: file is truncated'],
    ['a non-finite value', () => hfCheckpoint({ mutate: (t) => ((t.get('model.layers.0.self_attn.o_proj.weight')!.data as Float32Array)[5] = NaN) }).files, FormatError, 'tensor "model.layers.0.self_attn.o_proj.weight" element 5 is NaN'],
    ['an unexpected tensor', () => hfCheckpoint({ mutate: (t) => t.set('model.layers.0.self_attn.q_proj.bias', { dtype: 'F32', shape: [64], data: new Float32Array(64) }) }).files, FormatError, 'unexpected tensor "model.layers.0.self_attn.q_proj.bias"'],
    ['tied with an lm_head present', () => hfCheckpoint({ tied: false, config: { tie_word_embeddings: true } }).files, ConfigError, '"tie_word_embeddings" = true, but the checkpoint has its own "lm_head.weight"'],
    ['untied without an lm_head', () => hfCheckpoint({ tied: true, config: { tie_word_embeddings: false } }).files, FormatError, 'tensor "lm_head.weight" (shape [272, 64]) is missing'],
    ['unknown model_type', () => hfCheckpoint({ config: { model_type: 'qwen2' } }).files, ConfigError, '"model_type" = "qwen2" is not supported; supported: "llama"'],
    ['rope_scaling set', () => hfCheckpoint({ config: { rope_scaling: { type: 'linear', factor: 2 } } }).files, ConfigError, '"rope_scaling" = {"type":"linear","factor":2} is not supported'],
    ['attention_bias', () => hfCheckpoint({ config: { attention_bias: true } }).files, ConfigError, '"attention_bias" = true is not supported'],
    ['mlp_bias', () => hfCheckpoint({ config: { mlp_bias: true } }).files, ConfigError, '"mlp_bias" = true is not supported'],
    ['hidden_act not silu', () => hfCheckpoint({ config: { hidden_act: 'gelu' } }).files, ConfigError, '"hidden_act" = "gelu" is not supported'],
    ['head_dim inconsistent', () => hfCheckpoint({ config: { head_dim: 32 } }).files, ConfigError, '"head_dim" = 32 is not supported: it must equal hidden_size / num_attention_heads = 16'],
    ['K/V heads not dividing the heads', () => hfCheckpoint({ config: { num_key_value_heads: 3 } }).files, ConfigError, '"num_key_value_heads" = 3 must divide num_attention_heads = 4'],
    ['a field missing', () => hfCheckpoint({ config: { num_hidden_layers: undefined } }).files, ConfigError, '"num_hidden_layers" is missing'],
    ['a tokenizer with more ids than vocab_size', () => hfCheckpoint({ vocab: 200 }).files, FormatError, 'tokenizer.json: model.vocab has 261 entries, but config.json "vocab_size" = 200'],
  ];
  it.each(cases)('%s', async (_label, files, cls, part) => {
    const err = await loadError(files());
    expect(err).toBeInstanceOf(cls);
    expect(err.message).toContain(part);
  });

  it('ConfigErrors name the config.json field as their key', async () => {
    expect(((await loadError(hfCheckpoint({ config: { rope_scaling: { factor: 2 } } }).files)) as ConfigError).key).toBe('rope_scaling');
    expect(((await loadError(hfCheckpoint({ config: { vocab_size: 1 << 20 } }).files)) as ConfigError).key).toBe('vocab_size');
    expect(() => parseHfConfig([])).toThrow(ConfigError);
  });

  it('memory: refused from config.json alone, before any tensor is read (model.safetensors is garbage here)', async () => {
    const files = new Map(base.files).set('model.safetensors', new Uint8Array(3));
    const err = await loadError(files, { quant: 'q8', memory: { limitBytes: 100_000, loraRank: 4, where: 'this test' } });
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).key).toBe('memory');
    expect(err.message).toMatch(/needs about [\d.]+ MiB \(weights .* but this test allows 97\.7 KiB; quantize it/);
    // With room, the same garbage file is what fails.
    expect((await loadError(files, { quant: 'q8', memory: { limitBytes: 1e9, loraRank: 4, where: 'this test' } })).message).toContain('model.safetensors: safetensors: file is only 3 bytes');
  });

  it('the estimate grows with the rank and shrinks with quantization, as the formula says', () => {
    const { cfg } = parseHfConfig(base.config);
    const f = estimateMemory(cfg, { quant: 'f32', loraRank: 0 });
    const q8 = estimateMemory(cfg, { quant: 'q8', loraRank: 0 });
    const r8 = estimateMemory(cfg, { quant: 'q8', loraRank: 8 });
    expect(q8.weights).toBeLessThan(f.weights / 3);
    // No f32 copy of a quantized embedding or head: the total is twice the weights (the backend's and the host's) plus the rest.
    expect(q8.total).toBe(2 * q8.weights + q8.lora + q8.activations + q8.sampling);
    expect(r8.lora).toBe(4 * 4 * 2 * 8 * (8 * 64 + 3 * (64 + 96)));
    // Activations: linear in the number of sequences, more than linear in their length (attention is T²).
    const act = (sequences: number, seqLen: number) => estimateMemory(cfg, { quant: 'q8', loraRank: 8, sequences, seqLen }).activations;
    expect(act(16, 32)).toBe(2 * act(8, 32));
    expect(act(8, 64)).toBeGreaterThan(2 * act(8, 32));
    expect(estimateMemory(cfg, { quant: 'q8', loraRank: 8 }).activations).toBe(act(8, cfg.maxSeq));
    // Sampling: the KV cache, 2 · layers · prompts · seqLen · d f32 values, is most of it; it grows with the prompts.
    const smp = (prompts: number) => estimateMemory(cfg, { quant: 'q8', loraRank: 8, sequences: 8, seqLen: 32, prompts }).sampling;
    expect(smp(64)).toBeGreaterThan(4 * 2 * 2 * 64 * 32 * 64);
    expect(smp(64)).toBe(8 * smp(8));
  });

  it('cancel: an aborted signal stops the load', async () => {
    const ac = new AbortController();
    ac.abort(new Error('cancelled by the test'));
    expect((await loadError(base.files, { signal: ac.signal })).message).toBe('cancelled by the test');
  });

  it('progress reports reading, converting and quantizing, ending at done = total', async () => {
    const seen: string[] = [];
    await loadHfCheckpoint(sharded.files, { quant: 'q4', onProgress: (p) => seen.push(`${p.phase} ${p.done}/${p.total}`) });
    expect(seen).toContain('reading 2/2');
    expect(seen.some((s) => s.startsWith('converting'))).toBe(true);
    expect(seen.at(-1)).toBe(`quantizing ${1 + 2 * 9 + 2}/${1 + 2 * 9 + 2}`);
  });

  it('the folder hash is stable, and changes when any byte does', async () => {
    const h = await hfFolderHash(base.files);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(await hfFolderHash(new Map([...base.files].reverse()))).toBe(h);
    const bytes = base.files.get('model.safetensors')!.slice();
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
    expect(await hfFolderHash(new Map(base.files).set('model.safetensors', bytes))).not.toBe(h);
  });
});
