#!/usr/bin/env bash
# session 19 run 12: build b (= HEAD kernels): models swinv2_tiny_window16_256, four swapped / ceiling variants.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s19b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 570 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 540 --out $OUT/models-s19-window16.json > $OUT/models-s19-window16.log 2>&1
echo models rc $? | tee -a $OUT/summary.txt
grep -E "^  [a-e] |PASS|FAIL" $OUT/models-s19-window16.log
