/**
 * A frozen teammate: a language agent whose policy is an ONNX decoder run by onnxruntime-web
 * (src/model/onnx/ort.ts), whatever its architecture, with its folder's own tokenizer and chat
 * template. It has no parameters and is never updated:
 *   - `distributions` / `logProbs`: one full forward of the graph per distinct sequence (empty
 *     cache), log-softmax at the sampling temperature in f64 — deterministic (one wasm thread), and
 *     cached per step set, so the log-prob of any step is the same number every time it is asked
 *     for: every ratio π_θ/π_cur of its steps is exactly 1, its KL to the reference exactly 0;
 *   - `trainStep` changes nothing and reports zeros; its gradient and Fisher products are empty
 *     vectors (no parameters), so its geometric gain is 0; snapshots are empty;
 *   - `generate`: the graph's KV cache, one token per run, drawn by the project's own sampler
 *     (cpu sampling.ts: the same uniforms for the same seed, stream, step and sequence as a model
 *     of ours would use), so the experiment's seed fixes its messages.
 * The team around it is trained by SAT as usual (docs/method.md says what a frozen seat means for
 * the estimators and certificates).
 *
 * Not here: loading the folder (src/sat/onnxSeat.ts), the trainable ONNX seat (our model, LmAgent).
 */
import { logSoftmaxForward } from '../../backend/cpu/softmax';
import { sampleForward } from '../../backend/cpu/sampling';
import type { OrtDecoder } from '../../model/onnx/ort';
import type { TextTokenizer } from '../../model/tokenizer';
import type { AgentBatch, AgentInfo, AgentSnapshot, StepSet, TrainReport } from '../types';
import { pack, type GenerateOptions, type LmAgentPolicy } from './lm';

/** Step sets whose log-policies a frozen agent keeps (a stage asks for a handful, repeatedly). */
const CACHE_SETS = 16;

export class FrozenOnnxAgent implements LmAgentPolicy {
  private cache = new Map<Int32Array, Float64Array>();

  constructor(
    readonly index: number,
    readonly decoder: OrtDecoder,
    readonly tokenizer: TextTokenizer,
    readonly opts: { readonly name: string; readonly temperature: number; readonly topK: number; readonly maxSeq: number },
  ) {}

  get name(): string {
    return this.opts.name;
  }

  async info(): Promise<AgentInfo> {
    return { name: this.opts.name, kind: 'lm', parameters: 0, backend: `onnxruntime-web ${this.decoder.ep}` };
  }

  /** log π(·|s) at τ at every step ([K × V], f64), cached per step set. */
  private async logPolicyAt(steps: StepSet): Promise<Float64Array> {
    const hit = this.cache.get(steps.obs);
    if (hit) return hit;
    const p = pack(steps);
    const K = steps.obs.length;
    let V = 0;
    let lp = new Float64Array(0);
    // Each sequence runs once, up to its last asked-for position (pack pads with 0 after it).
    const lastPos = new Map<number, number>();
    for (const r of p.row) lastPos.set(Math.floor(r / p.T), Math.max(lastPos.get(Math.floor(r / p.T)) ?? 0, r % p.T));
    const rows = new Map<number, Float32Array>(); // batch row b → its logits [T × V]
    for (let k = 0; k < K; k++) {
      const b = Math.floor(p.row[k]! / p.T);
      let z = rows.get(b);
      if (!z) {
        const out = await this.decoder.logits(p.tokens.slice(b * p.T, b * p.T + lastPos.get(b)! + 1));
        z = out.logits;
        V = out.V;
        rows.set(b, z);
        if (lp.length === 0) lp = new Float64Array(K * V);
      }
      const pos = p.row[k]! % p.T;
      logSoftmaxForward(lp.subarray(k * V, (k + 1) * V), z.subarray(pos * V, (pos + 1) * V), 1, V, this.opts.temperature);
    }
    if (this.cache.size >= CACHE_SETS) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(steps.obs, lp);
    return lp;
  }

  async distributions(steps: StepSet): Promise<Float64Array> {
    return (await this.logPolicyAt(steps)).map(Math.exp);
  }

  async logProbs(steps: StepSet): Promise<Float64Array> {
    const actions = steps.actions;
    if (!actions || actions.length !== steps.obs.length) throw new RangeError(`agent ${this.index}: logProbs needs one action per step`);
    const K = steps.obs.length;
    const out = new Float64Array(K);
    if (K === 0) return out;
    const lp = await this.logPolicyAt(steps);
    const V = lp.length / K;
    for (let k = 0; k < K; k++) out[k] = lp[k * V + actions[k]!]!;
    return out;
  }

  /** π_cur is the policy itself: nothing to freeze. */
  async setReference(): Promise<void> {}

  async klToReference(steps: StepSet): Promise<Float64Array> {
    return new Float64Array(steps.obs.length);
  }

  async trainStep(_batch: AgentBatch): Promise<TrainReport> {
    return { objective: 0, surrogate: 0, clipfrac: 0, gradNorm: 0 };
  }

  async surrogateGradient(): Promise<Float64Array> {
    return new Float64Array(0);
  }

  async fisherVectorProduct(): Promise<Float64Array> {
    return new Float64Array(0);
  }

  async snapshot(): Promise<AgentSnapshot> {
    return { params: new Float64Array(0), optim: new Float64Array(0) };
  }

  async restore(): Promise<void> {}

  async interpolate(): Promise<void> {}

  /** Logits at τ of every step's state ([K × V]): τ · log π (a softmax at τ of these is π). */
  async currentLogits(steps: StepSet): Promise<Float32Array> {
    const lp = await this.logPolicyAt(steps);
    return Float32Array.from(lp, (x) => x * this.opts.temperature);
  }

  async generate(contexts: readonly Int32Array[], opts: GenerateOptions): Promise<{ tokens: Int32Array[]; stopped: boolean[] }> {
    const tokens: Int32Array[] = [];
    const stopped: boolean[] = [];
    const out = new Int32Array(1);
    for (const [i, c] of contexts.entries()) {
      const room = Math.max(0, Math.min(opts.maxNew, this.opts.maxSeq - c.length));
      const r = await this.decoder.sample(c, {
        maxNew: room,
        stop: this.tokenizer.eos,
        pick: (z, step) => {
          sampleForward(out, z, 1, z.length, { seed: opts.seed, stream: opts.stream, step, temperature: this.opts.temperature, topK: this.opts.topK, seq0: i });
          return out[0]!;
        },
      });
      tokens.push(r.tokens);
      stopped.push(r.stopped);
    }
    return { tokens, stopped };
  }

  async dispose(): Promise<void> {
    this.cache.clear();
    await this.decoder.release();
  }
}
