#!/usr/bin/env bash
# scripts/gpu-run.sh — the speed issue's device check, on a GPU machine, from the repo root, with
# .gpu/ (scripts/gpu-pack.sh) carried along. Inside 8 minutes it:
#   1. unpacks Node, the webgpu package and onnxruntime-web's WebGPU build (into node_modules/),
#      and the Vulkan loader when the machine has none;
#   2. runs `bench:hf --gpu` on the SmolLM-135M-shaped checkpoint: ours on WebGPU (f32, q8) and
#      onnxruntime-web's WebGPU EP on the same ONNX (KV cache), ours f32 on the CPU beside them —
#      prefill 64, decode 1 / 4 / 16 prompts, LoRA, logits checked first (docs/performance.md);
#   3. runs `bench --gpu` (matmul variants with GFLOP/s and % of PEAK, attention, the model's
#      train step and decode with dispatches/submissions per step, ORT webgpu beside ours);
#   4. runs two arith-team stages with backend = webgpu (one device per agent, --profile) and the
#      same two on the CPU backend beside them, for the stage times.
# Every output goes to $OUT (the device tool's folder; /tmp/gpu-out otherwise): machine.txt,
# hf-gpu.txt, bench-gpu.txt, stage-gpu.txt, stage-cpu.txt. Each step has its own timeout (270 +
# 100 + 2 × 50 s), and a failing step does not stop the next.
#
# Environment: PEAK = the card's f32 peak in GFLOP/s (H200/H100 SXM: 67000; printed as % of
# peak); GPU_RUN_QUICK=1 = the smoke run used to test this script on SwiftShader (bench --quick,
# shrunk stages, software driver allowed).
#
# Not here: packing (gpu-pack.sh), the numbers' meaning (docs/performance.md).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${OUT:-/tmp/gpu-out}
mkdir -p "$DEST"
[ -f .gpu/node.gz ] || { echo "no .gpu/node.gz: run bash scripts/gpu-pack.sh first (and carry .gpu)"; exit 2; }

mkdir -p /tmp/gpu-node && gunzip -c .gpu/node.gz > /tmp/gpu-node/node && chmod +x /tmp/gpu-node/node
export PATH=/tmp/gpu-node:$PATH
mkdir -p node_modules/webgpu node_modules/onnxruntime-web
tar xzf .gpu/webgpu.tgz -C node_modules/webgpu
tar xzf .gpu/ort.tgz -C node_modules/onnxruntime-web
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1'; then
  if [ "${GPU_RUN_QUICK:-0}" = 1 ]; then echo "no system libvulkan: the smoke run uses Chromium's (softwareFallback)";
  else for f in .gpu/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
fi
NV_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$NV_ICD" ] && export VK_DRIVER_FILES=$NV_ICD VK_ICD_FILENAMES=$NV_ICD

{ date -u; uname -m; nproc; node --version; nvidia-smi -L 2>/dev/null || echo "nvidia-smi: none"; } | tee "$DEST/machine.txt"

if [ "${GPU_RUN_QUICK:-0}" = 1 ]; then
  HF=(--gpu --size tiny --reps 1); BENCH=(--gpu --quick); STAGE=(--stages 1 --set agents=2 --set batch=2 --set group=2 --set evalEpisodes=8 --set geoIters=0); T_HF=900; T_BENCH=900; T_STAGE=600
else
  HF=(--gpu --reps 2 --budget 10 --deadline 45); BENCH=(--gpu ${PEAK:+--peak-gflops=$PEAK}); STAGE=(--stages 2); T_HF=270; T_BENCH=100; T_STAGE=50
fi
echo "== bench:hf ${HF[*]}"
timeout "$T_HF" node .gpu/hf.mjs "${HF[@]}" 2>&1 | tee "$DEST/hf-gpu.txt"
echo "== bench ${BENCH[*]}"
timeout "$T_BENCH" node .gpu/bench.mjs "${BENCH[@]}" 2>&1 | tee "$DEST/bench-gpu.txt"
echo "== arith-team on webgpu ${STAGE[*]}"
timeout "$T_STAGE" node .gpu/sat.mjs --preset arith-team "${STAGE[@]}" --set backend=webgpu --profile 2>&1 | tee "$DEST/stage-gpu.txt"
echo "== arith-team on the CPU ${STAGE[*]}"
timeout "$T_STAGE" node .gpu/sat.mjs --preset arith-team "${STAGE[@]}" --profile 2>&1 | tee "$DEST/stage-cpu.txt"
ls -la "$DEST"
