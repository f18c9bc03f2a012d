/**
 * How storage, share links and experiment files record an ONNX model folder's seat beside its
 * hash: `{file, mode}` — the .onnx file of the folder the seat runs and whether it trains
 * (mapped into our model) or is frozen (run by onnxruntime-web). A small module of its own so the
 * link and file readers check it without importing the folder reader.
 *
 * Not here: reading the folder (onnxFiles.ts).
 */

/** `o` when it is an ONNX seat's record ({file: "….onnx" in the folder or its onnx/, mode: trainable | frozen}), else undefined. */
export function seatOnnx(o: unknown): { file: string; mode: 'trainable' | 'frozen' } | undefined {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return undefined;
  const { file, mode } = o as { file?: unknown; mode?: unknown };
  if (Object.keys(o).some((k) => k !== 'file' && k !== 'mode')) return undefined;
  return typeof file === 'string' && /^(?:onnx\/)?[^/]+\.onnx$/.test(file) && file.length <= 200 && (mode === 'trainable' || mode === 'frozen') ? { file, mode } : undefined;
}
