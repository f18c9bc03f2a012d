/**
 * Points onnxruntime-web at the wasm file of the page's own build (no CDN): Vite emits
 * ort-wasm-simd-threaded.jsep.wasm (the build the package's default entry loads: wasm and
 * WebGPU) as an asset of the build and gives its URL here. Only the URL is bundled; the file
 * (~28 MB) is fetched when a seat first needs onnxruntime-web (src/model/onnx/ort.ts `loadOrt`).
 * Imported by the browser worker's entry only (agent.worker.ts): Node finds the package's files
 * in node_modules by itself.
 *
 * Not here: loading onnxruntime-web (ort.ts).
 */
import jsepWasm from 'onnxruntime-web/ort-wasm-simd-threaded.jsep.wasm?url';
import { setOrtSetup } from '../model/onnx/ort';

setOrtSetup((ort) => {
  ort.env.wasm.wasmPaths = { wasm: new URL(jsepWasm, self.location.href).href };
});
