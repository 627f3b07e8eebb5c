#!/usr/bin/env bash
# Session 24 run D2: bench_models swinv2_base_window12to24_192to384 (bs 16) and the compiled variants of swinv2_base_window12_192, on a84bdbf's kernels (s24b).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s24b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 560 python benchmarks/bench_models.py --models swinv2_base_window12to24_192to384,swinv2_base_window12_192 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 500 --out $OUT/models-nvidia-h100-80gb-hbm3-session24-base.json > $OUT/models.log 2>&1
echo models rc $? > $OUT/summary.txt; tail -30 $OUT/models.log >> $OUT/summary.txt; cat $OUT/summary.txt
