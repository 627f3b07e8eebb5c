#!/usr/bin/env bash
# Session 63 run H: run G's build (carried, .devbuild/s63g.so.xz = the working tree's kernels)
# through more of the window op's CUDA tests: extremes, the rest of the forward forms, modules
# and model swap (fp16 / bf16 under autocast against the original modules).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runH.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s63g.so.xz flash_window_attn/_C.abi3.so
timeout 90 python -m pytest -q tests/test_extremes.py -m cuda 2>&1 | tail -2
echo "extremes $(( $(date +%s) - t0 )) s"
timeout 70 python -m pytest -q tests/test_window_attention.py -m cuda \
  -k "many_windows or forward_placements or row_tail or current_stream or backward_memory or bias_mask_build" 2>&1 | tail -2
echo "window $(( $(date +%s) - t0 )) s"
timeout 80 python -m pytest -q tests/test_modules.py tests/test_swap.py -m cuda 2>&1 | tail -2
echo "end $(( $(date +%s) - t0 )) s"
