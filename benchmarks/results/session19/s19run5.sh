#!/usr/bin/env bash
# session 19 run 5: build b (= 93b5474 kernels): window bench configs 0,5,6,7 (N <= 64); models window8 all four variants.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s19b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 270 python benchmarks/bench_window_attention.py --configs 0,5,6,7 --out $OUT/win-s19-n64.json > $OUT/win-s19-n64.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt
grep -A14 "^Bars" $OUT/win-s19-n64.log | tee -a $OUT/summary.txt
timeout 310 python benchmarks/bench_models.py --models swinv2_tiny_window8_256 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 290 --out $OUT/models-s19-window8.json > $OUT/models-s19-window8.log 2>&1
echo models rc $? | tee -a $OUT/summary.txt
tail -14 $OUT/models-s19-window8.log
