#!/usr/bin/env bash
# Session 26 run I: bench_models swinv2_tiny_window16_256 (the issue-3 bar model), all six variants,
# on run G's build (window kernels unchanged since session 25).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 570 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap_compile,ceiling_compile,swap,ceiling,eager,compile --time-budget 520 --out $OUT/models-nvidia-h100-80gb-hbm3-session26-swinv2_tiny_window16_256.json > $OUT/models.log 2>&1
echo models rc $? > $OUT/summary.txt; tail -30 $OUT/models.log >> $OUT/summary.txt; cat $OUT/summary.txt
