#!/usr/bin/env bash
# Session 23 run G: window benchmark rows at N > 64 and the window16 model benchmark (issue 3 bar).
export PYTHONPATH=$PWD
# the kernels of commit 46a125f (this .so also holds the key-side kernel bwd_kv_wg_kernel.cuh, which run F
# found slower and which does not land: off here)
export FWA_WINDOW_BWD_KV_WG=0
python tools/device/unxz.py tools/device/s23f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 200 python benchmarks/bench_window_attention.py --configs 1,2,3,4 --out $OUT/nvidia-h100-80gb-hbm3-session23-large.json > $OUT/bench_window.log 2>&1
echo bench rc $? | tee $OUT/summary.txt; tail -24 $OUT/bench_window.log | tee -a $OUT/summary.txt
timeout 330 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 280 --out $OUT/models-nvidia-h100-80gb-hbm3-session23-swinv2_tiny_window16_256.json > $OUT/models.log 2>&1
echo models rc $? | tee -a $OUT/summary.txt; tail -20 $OUT/models.log | tee -a $OUT/summary.txt
