#!/usr/bin/env bash
# session 20 run 5: build a (= baa3f05 kernels): window bench configs 0,5,6,7 (N <= 64), both dtypes.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s20a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 420 python benchmarks/bench_window_attention.py --configs 0,5,6,7 --out $OUT/win-s20-n64.json > $OUT/win-s20-n64.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt
grep -A14 "^Bars" $OUT/win-s20-n64.log | tee -a $OUT/summary.txt
