#!/usr/bin/env bash
# session 20 run 7: build e (= ea464de kernels): window bench configs 0,5,6,7 (N <= 64) and 1,3 (N = 256, 144), both dtypes.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s20e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 300 python benchmarks/bench_window_attention.py --configs 0,5,6,7 --out $OUT/win-s20-n64.json > $OUT/win-s20-n64.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt
grep -A14 "^Bars" $OUT/win-s20-n64.log | tee -a $OUT/summary.txt
timeout 270 python benchmarks/bench_window_attention.py --configs 1,3 --out $OUT/win-s20-n144-256.json > $OUT/win-s20-n144-256.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt
grep -A8 "^Bars" $OUT/win-s20-n144-256.log | tee -a $OUT/summary.txt
