/**
 * Tiny random ONNX model folders for the tests, in the layout of transformers.js / onnx-community
 * (config.json, tokenizer.json, tokenizer_config.json, generation_config.json, onnx/model*.onnx
 * [+ _data]): the checkpoint of tests/helpers/hfCheckpoint.ts exported by bench/onnx/decoder.ts.
 * Nothing is downloaded. Returns the folder, the HF checkpoint it came from and the values the
 * graph computes with (dequantized), for bit-for-bit comparisons.
 *
 * Not here: the exporter's graph (bench/onnx/decoder.ts), the reader (src/model/onnx/).
 */
import { exportHfDecoder, type DecoderExportOptions } from '../../bench/onnx/decoder';
import { hfCheckpoint, type HfCheckpoint, type HfSpec } from './hfCheckpoint';

export interface OnnxFolder {
  readonly files: Map<string, Uint8Array>;
  readonly hf: HfCheckpoint;
  readonly used: Map<string, { shape: number[]; data: Float32Array }>;
  /** The .onnx file's name in the folder. */
  readonly file: string;
}

export function onnxFolder(spec: HfSpec = {}, o: DecoderExportOptions = {}): OnnxFolder {
  const hf = hfCheckpoint(spec);
  const c = hf.config as Record<string, number>;
  const file = o.file ?? 'onnx/model.onnx';
  const ex = exportHfDecoder(
    { vocab: c.vocab_size!, d: c.hidden_size!, layers: c.num_hidden_layers!, heads: c.num_attention_heads!, kvHeads: c.num_key_value_heads!, hidden: c.intermediate_size!, ropeTheta: c.rope_theta!, eps: c.rms_norm_eps!, maxPositions: c.max_position_embeddings! },
    hf.tensors,
    { ...o, file },
  );
  const files = new Map<string, Uint8Array>();
  for (const [name, bytes] of hf.files) if (name.endsWith('.json') && !name.startsWith('model.safetensors')) files.set(name, bytes);
  for (const [name, bytes] of ex.files) files.set(name, bytes);
  return { files, hf, used: ex.used, file };
}
