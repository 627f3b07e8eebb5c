#!/usr/bin/env bash
# The main job. On a CUDA machine: the benchmark (benchmarks/bench_window_attention.py, results in
# benchmarks/results/). Without a GPU: a small CPU demo (python -m flash_window_attn.demo) that runs
# the op on a Swin-shaped problem against the reference. Installs what is missing and builds the
# extension if it does not import (or, on a GPU machine, lacks its CUDA kernels).
#   bash scripts/main.sh [args for the benchmark or the demo]
#   bash scripts/main.sh models [args]   the end-to-end Swin model benchmark (benchmarks/bench_models.py,
#                                        GPU; installs timm / transformers at the tested versions)
#   bash scripts/main.sh sliding [args]  the sliding-window attention benchmark
#                                        (benchmarks/bench_sliding_window.py, GPU)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/_env.sh

fwa_ensure_deps
if fwa_has_gpu; then
  fwa_ensure_deps --optional matplotlib  # for the PNG plot; the benchmark runs without it
  fwa_importable cuda || fwa_build
  if [ "${1:-}" = "models" ]; then
    shift
    fwa_ensure_test_deps
    exec "$PYTHON" benchmarks/bench_models.py "$@"
  fi
  if [ "${1:-}" = "sliding" ]; then
    shift
    exec "$PYTHON" benchmarks/bench_sliding_window.py "$@"
  fi
  exec "$PYTHON" benchmarks/bench_window_attention.py "$@"
else
  fwa_importable || fwa_build
  exec "$PYTHON" -m flash_window_attn.demo "$@"
fi
