#!/usr/bin/env bash
# scripts/gpu-pack.sh — packs into .gpu/ (git-ignored through .git/info/exclude) what a bare GPU
# machine needs to run the speed issue's device check (docs/performance.md "On a real GPU"): a
# Linux x86-64 box with a GPU driver but no Node, no npm registry and no network.
#
#   bash scripts/gpu-pack.sh          # here, once: writes .gpu/ (~60 MB) and prints its size
#   bash scripts/gpu-run.sh           # there, from the repo root, with .gpu carried along
#
# What goes in:
#   node.gz      this machine's Node binary, gzip -9 (the same major version the project uses);
#   webgpu.tgz   the `webgpu` package's index.js, package.json and dist/linux-x64 (Dawn);
#   ort.tgz      onnxruntime-web's WebGPU build and its wasm (the bench's peer on the GPU);
#   bench.mjs    bench/cpu.ts bundled into one file (`--gpu` runs bench/gpu.ts), webgpu external;
#   hf.mjs       bench/hf.ts bundled the same way (`--gpu`: the SmolLM-135M-shaped table on WebGPU);
#   sat.mjs      src/cli/sat.ts bundled the same way (a language stage with backend = webgpu);
#   *.deb        the Vulkan loader (libvulkan1) from Debian, for a machine that has none.
# Both bundles resolve `webgpu` and onnxruntime-web from ../node_modules, where gpu-run.sh
# unpacks them; the shipped models are read from public/models (tracked, so they travel).
#
# Tested here on SwiftShader: `GPU_RUN_QUICK=1 bash scripts/gpu-run.sh` (docs/performance.md).
# Not here: anything that runs on the GPU machine (gpu-run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.gpu
grep -qxF '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf "$OUT"
mkdir -p "$OUT"

echo "node $(node --version) → $OUT/node.gz"
gzip -9c "$(readlink -f "$(command -v node)")" > "$OUT/node.gz"

echo "webgpu $(node -p "require('./node_modules/webgpu/package.json').version") → $OUT/webgpu.tgz"
tar czf "$OUT/webgpu.tgz" -C node_modules/webgpu index.js package.json dist/linux-x64

ORT=node_modules/onnxruntime-web
echo "onnxruntime-web $(node -p "require('./$ORT/package.json').version") (webgpu build) → $OUT/ort.tgz"
tar czf "$OUT/ort.tgz" -C "$ORT" package.json dist/ort.webgpu.min.mjs dist/ort-wasm-simd-threaded.jsep.mjs dist/ort-wasm-simd-threaded.jsep.wasm

for pair in bench/cpu.ts:bench.mjs bench/hf.ts:hf.mjs src/cli/sat.ts:sat.mjs; do
  src=${pair%%:*}; dst=${pair##*:}
  echo "$src → $OUT/$dst"
  # createRequire: a CommonJS dependency inside an ESM bundle still finds `require`.
  npx esbuild "$src" --bundle --platform=node --format=esm --target=node20 --log-level=warning \
    --external:webgpu --outfile="$OUT/$dst" \
    --banner:js="import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
done

echo "the Vulkan loader (libvulkan1, amd64) → $OUT/"
(cd "$OUT" && apt-get -qq -oAPT::Architecture=amd64 download libvulkan1) || echo "  apt-get download failed: gpu-run.sh then needs a machine with libvulkan.so.1"

du -sh "$OUT"/* | sed 's/^/  /'
du -sh "$OUT"
