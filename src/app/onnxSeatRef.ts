/**
 * How storage, share links and experiment files record an ONNX model folder's seat beside its
 * hash: `{file, mode}` — the .onnx file of the folder the seat runs and whether it trains
 * (mapped into our model) or is frozen (run by onnxruntime-web). Its schema is payloads.ts's; a
 * small module of its own so the link and file readers check it without importing the folder reader.
 *
 * Not here: reading the folder (onnxFiles.ts).
 */
import * as v from 'valibot';
import { onnxSeatSchema, type OnnxSeat } from './payloads';

/** `o` when it is an ONNX seat's record ({file: "….onnx" in the folder or its onnx/, mode: trainable | frozen}), else undefined. */
export function seatOnnx(o: unknown): OnnxSeat | undefined {
  return v.is(onnxSeatSchema, o) ? { file: o.file, mode: o.mode } : undefined;
}
