/**
 * An ONNX decoder run by onnxruntime-web: the one place the package is imported, dynamically, so
 * its code and wasm load only when a seat needs them. The page's worker first calls
 * `setOrtSetup` with the wasm files the build emits (src/workers/ortAssets.ts: no CDN); Node (CLI,
 * tests, bench) lets the package find its own files in node_modules.
 *
 * `OrtDecoder` speaks the decoder interface optimum and onnxruntime-genai exports share:
 *   inputs  input_ids [B, T]; attention_mask [B, P+T] and position_ids [B, T] when the graph
 *           has them; past_key_values.L.key / .value [B, KV, P, HS] (float or float16)
 *   outputs logits [B, T, V]; present.L.key / .value
 * one sequence at a time (B = 1): `lastLogits` runs a prompt from an empty cache, `sample` decodes
 * with the cache the graph returns (the prompt once, then one token per run). Any other graph
 * input is refused by name.
 *
 * Not here: reading weights (llama.ts), the seats (src/sat/onnxSeat.ts).
 */
import { ConfigError, FormatError } from '../../core/errors';
import { describeAdapter, isSoftwareAdapter } from '../../backend/webgpu/device';
import type { OnnxModel } from './read';

type Ort = typeof import('onnxruntime-web');

let setup: ((ort: Ort) => void) | null = null;
let loaded: Promise<Ort> | null = null;

/** How the page points onnxruntime-web at the wasm files of its own build (before the first load). */
export function setOrtSetup(f: (ort: Ort) => void): void {
  setup = f;
}

/** onnxruntime-web, imported on first use (one wasm thread: deterministic, no nested workers). */
export function loadOrt(): Promise<Ort> {
  loaded ??= import('onnxruntime-web').then((m) => {
    const ort = ((m as { default?: Ort }).default ?? m) as Ort;
    ort.env.wasm.numThreads = 1;
    setup?.(ort);
    return ort;
  });
  return loaded;
}

export type OrtProvider = 'wasm' | 'webgpu';

/**
 * WebGPU where this context has a hardware adapter, else wasm; with the reason, for the card. A
 * software adapter (SwiftShader, llvmpipe) is passed over, as the project's own `auto` backend
 * does: it runs a graph far slower than wasm.
 */
export async function pickOrtProvider(): Promise<{ ep: OrtProvider; why: string }> {
  const gpu = (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
  if (!gpu) return { ep: 'wasm', why: 'no WebGPU in this context' };
  try {
    const adapter = await gpu.requestAdapter();
    if (!adapter) return { ep: 'wasm', why: 'no WebGPU adapter here' };
    if (isSoftwareAdapter(adapter)) return { ep: 'wasm', why: `the only WebGPU adapter is a software one (${describeAdapter(adapter)})` };
    return { ep: 'webgpu', why: `WebGPU adapter ${describeAdapter(adapter)}` };
  } catch (e) {
    return { ep: 'wasm', why: `no WebGPU adapter (${e instanceof Error ? e.message : String(e)})` };
  }
}

interface PastSpec {
  readonly name: string;
  readonly present: string;
  readonly type: 'float32' | 'float16';
  readonly kv: number;
  readonly hs: number;
}

export interface OrtSampleOptions {
  readonly maxNew: number;
  /** The end-of-message token (not returned). */
  readonly stop: number;
  /** The token drawn from the last position's logits at decoding step k (the caller's sampler and seed). */
  readonly pick: (logits: Float32Array, step: number) => number;
}

export class OrtDecoder {
  private constructor(
    readonly ort: Ort,
    readonly session: import('onnxruntime-web').InferenceSession,
    readonly ep: OrtProvider,
    private readonly past: readonly PastSpec[],
    private readonly hasMask: boolean,
    private readonly hasPositions: boolean,
  ) {}

  /**
   * A session on `model` (read.ts's parse of `files.get(model.file)`), its external data handed
   * over from `files`. ConfigError when a graph input is not one of the decoder interface's.
   */
  static async create(files: ReadonlyMap<string, Uint8Array>, model: OnnxModel, ep: OrtProvider = 'wasm'): Promise<OrtDecoder> {
    const past: PastSpec[] = [];
    let hasMask = false;
    let hasPositions = false;
    let hasIds = false;
    for (const i of model.inputs) {
      if (model.initializers.has(i.name)) continue; // old exporters list initializers as inputs
      const m = /^past_key_values\.(\d+)\.(key|value)$/.exec(i.name);
      if (m) {
        const [kv, hs] = [i.dims[1], i.dims[3]];
        if (typeof kv !== 'number' || typeof hs !== 'number') throw new FormatError(`${model.file}: input "${i.name}" does not give its heads and head size as numbers ([${i.dims.join(', ')}])`);
        if (i.elemType !== 1 && i.elemType !== 10) throw new FormatError(`${model.file}: input "${i.name}" has element type ${i.elemType}; float or float16 caches are supported`);
        past.push({ name: i.name, present: `present.${m[1]}.${m[2]}`, type: i.elemType === 10 ? 'float16' : 'float32', kv, hs });
      } else if (i.name === 'input_ids') hasIds = true;
      else if (i.name === 'attention_mask') hasMask = true;
      else if (i.name === 'position_ids') hasPositions = true;
      else throw new ConfigError('onnx', i.name, `${model.file}: graph input "${i.name}" is not one this playground feeds (input_ids, attention_mask, position_ids, past_key_values.N.key/value)`);
    }
    if (!hasIds) throw new ConfigError('onnx', model.file, `${model.file}: the graph has no "input_ids" input; not a text decoder`);
    if (!model.outputs.some((o) => o.name === 'logits')) throw new ConfigError('onnx', model.file, `${model.file}: the graph has no "logits" output; not a text decoder`);
    for (const p of past) {
      if (!model.outputs.some((o) => o.name === p.present)) throw new ConfigError('onnx', p.name, `${model.file}: input "${p.name}" has no matching output "${p.present}"`);
    }
    const ort = await loadOrt();
    const dir = model.file.includes('/') ? model.file.slice(0, model.file.lastIndexOf('/') + 1) : '';
    const externalData: { path: string; data: Uint8Array }[] = [];
    for (const [name, bytes] of files) {
      if (name !== model.file && name.startsWith(dir) && !name.slice(dir.length).includes('/') && !name.endsWith('.onnx') && !name.endsWith('.json')) {
        externalData.push({ path: name.slice(dir.length), data: bytes });
      }
    }
    let session: import('onnxruntime-web').InferenceSession;
    try {
      session = await ort.InferenceSession.create(files.get(model.file)!, {
        executionProviders: [ep],
        graphOptimizationLevel: 'all',
        ...(externalData.length > 0 ? { externalData } : {}),
      });
    } catch (e) {
      // The graph passed read.ts's checks, so what onnxruntime still refuses is the file's: its first line, never its stack.
      const why = (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 300);
      throw new FormatError(`${model.file}: onnxruntime-web could not load this graph (${why}); nothing was seated`);
    }
    return new OrtDecoder(ort, session, ep, past, hasMask, hasPositions);
  }

  private emptyPast(): Record<string, import('onnxruntime-web').Tensor> {
    const feeds: Record<string, import('onnxruntime-web').Tensor> = {};
    for (const p of this.past) {
      feeds[p.name] = p.type === 'float16' ? new this.ort.Tensor('float16', new Uint16Array(0), [1, p.kv, 0, p.hs]) : new this.ort.Tensor('float32', new Float32Array(0), [1, p.kv, 0, p.hs]);
    }
    return feeds;
  }

  /** One run on `tokens` after `pastLen` cached positions; returns logits [T × V] and the new cache. */
  private async run(tokens: Int32Array, pastLen: number, cache: Record<string, import('onnxruntime-web').Tensor>): Promise<{ logits: Float32Array; V: number; cache: Record<string, import('onnxruntime-web').Tensor> }> {
    const T = tokens.length;
    const feeds: Record<string, import('onnxruntime-web').Tensor> = { input_ids: new this.ort.Tensor('int64', BigInt64Array.from(tokens, (t) => BigInt(t)), [1, T]), ...cache };
    if (this.hasMask) feeds.attention_mask = new this.ort.Tensor('int64', new BigInt64Array(pastLen + T).fill(1n), [1, pastLen + T]);
    if (this.hasPositions) feeds.position_ids = new this.ort.Tensor('int64', BigInt64Array.from({ length: T }, (_, i) => BigInt(pastLen + i)), [1, T]);
    const out = await this.session.run(feeds);
    const lt = out.logits!;
    const V = lt.dims[lt.dims.length - 1]!;
    let logits: Float32Array;
    if (lt.type === 'float16') {
      const { f16ToF32 } = await import('../../core/f16');
      logits = Float32Array.from(lt.data as Uint16Array, (h) => f16ToF32(h));
    } else logits = lt.data as Float32Array;
    const next: Record<string, import('onnxruntime-web').Tensor> = {};
    for (const p of this.past) next[p.name] = out[p.present]!;
    for (const [name, t] of Object.entries(out)) if (name === 'logits' || !this.past.some((p) => p.present === name)) t.dispose?.();
    for (const t of Object.values(cache)) t.dispose?.();
    return { logits, V, cache: next };
  }

  /** Logits [T × V] of every position of one sequence, from an empty cache. */
  async logits(tokens: Int32Array): Promise<{ logits: Float32Array; V: number }> {
    const r = await this.run(tokens, 0, this.emptyPast());
    for (const t of Object.values(r.cache)) t.dispose?.();
    return { logits: r.logits, V: r.V };
  }

  /**
   * Raw logits [K × V] at the flat rows `row` (b·T + t) of a right-padded [B × T] token batch, as
   * our model's `logitRows` returns them: one run per sequence that has a row, over its tokens up
   * to the last row asked for (the padding after it never enters a causal graph).
   */
  async logitRows(tokens: Int32Array, B: number, T: number, row: Int32Array, V: number): Promise<Float32Array> {
    const out = new Float32Array(row.length * V);
    for (let b = 0; b < B; b++) {
      let last = -1;
      for (const r of row) if (r >= b * T && r < (b + 1) * T) last = Math.max(last, r - b * T);
      if (last < 0) continue;
      const z = await this.logits(tokens.subarray(b * T, b * T + last + 1));
      if (z.V !== V) throw new ConfigError('onnx', z.V, `onnxruntime returned ${z.V} logits per position, the model ${V}; the graph's vocabulary is not config.json's`);
      row.forEach((r, k) => {
        if (r >= b * T && r <= b * T + last) out.set(z.logits.subarray((r - b * T) * V, (r - b * T + 1) * V), k * V);
      });
    }
    return out;
  }

  /** Logits at the last position of one sequence ([V]). */
  async lastLogits(tokens: Int32Array): Promise<Float32Array> {
    const { logits, V } = await this.logits(tokens);
    return logits.slice(logits.length - V);
  }

  /** Samples one message after `prompt` with the graph's cache (header); the stop token ends it (not included). */
  async sample(prompt: Int32Array, o: OrtSampleOptions): Promise<{ tokens: Int32Array; stopped: boolean }> {
    const out: number[] = [];
    let r = await this.run(prompt, 0, this.emptyPast());
    let pastLen = prompt.length;
    let stopped = false;
    for (let k = 0; k < o.maxNew; k++) {
      const z = r.logits.subarray(r.logits.length - r.V);
      const t = o.pick(z, k);
      if (t === o.stop) {
        stopped = true;
        break;
      }
      out.push(t);
      if (k + 1 === o.maxNew) break;
      r = await this.run(Int32Array.of(t), pastLen, r.cache);
      pastLen += 1;
    }
    for (const t of Object.values(r.cache)) t.dispose?.();
    return { tokens: Int32Array.from(out), stopped };
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
