#!/usr/bin/env bash
# Session 23 run H: the other models (window8, base window12) on the kernels of 46a125f.
export PYTHONPATH=$PWD
export FWA_WINDOW_BWD_KV_WG=0   # run F's build holds the unlanded chunked key side: off (= 46a125f's kernels)
python tools/device/unxz.py tools/device/s23f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 290 python benchmarks/bench_models.py --models swinv2_tiny_window8_256,swinv2_base_window12_192 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 240 --out $OUT/models-nvidia-h100-80gb-hbm3-session23-other.json > $OUT/models.log 2>&1
echo models rc $? > $OUT/summary.txt; tail -40 $OUT/models.log >> $OUT/summary.txt
