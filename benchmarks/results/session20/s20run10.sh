#!/usr/bin/env bash
# session 20 run 10: build e (= ea464de kernels): models swinv2_tiny_window8_256, four swapped / ceiling variants.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s20e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 330 python benchmarks/bench_models.py --models swinv2_tiny_window8_256 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 300 --out $OUT/models-s20-window8.json > $OUT/models-s20-window8.log 2>&1
echo models rc $? | tee -a $OUT/summary.txt
grep -E "^[a-e] |PASS|FAIL" $OUT/models-s20-window8.log
