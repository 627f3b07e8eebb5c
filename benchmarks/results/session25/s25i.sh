#!/usr/bin/env bash
# Session 25 run I: bench_models swinv2_base_window12to24_192to384 (bs 16) and the compiled variants of swinv2_base_window12_192, on the session-25 kernels (s25h: the wg query side at Npad 192 and in key ranges above 256).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s25h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 560 python benchmarks/bench_models.py --models swinv2_base_window12to24_192to384,swinv2_base_window12_192 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 500 --out $OUT/models-nvidia-h100-80gb-hbm3-session25-base.json > $OUT/models.log 2>&1
echo models rc $? > $OUT/summary.txt; tail -30 $OUT/models.log >> $OUT/summary.txt; cat $OUT/summary.txt
