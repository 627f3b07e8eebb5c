#!/usr/bin/env bash
# Session 39 run A: the GPU timeline of one benchmarked call (timeline.py) on s38h's kernels (= main's
# but for the review refactors of runs J / K): window forward configs 3 (N = 144), 1 (N = 256),
# 8 (d = 64), 0 (N = 64) and the block-sliding fwd+bwd (block256x16), bf16.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s38h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python benchmarks/results/session39/timeline.py s38h 3 1 8 0 block 2>&1 | grep -v -i warn | tee $OUT/runA-timeline.txt
