#!/usr/bin/env bash
# session 20 run 13: build h (= g + the Npad-64 wgmma forward at 5 one-warpgroup CTAs per SM: 90
# registers, 45.5 KB) against g: bitwise errors, A/B timing, wgmma tests, window bench N <= 64.
export PYTHONPATH=$PWD
for B in s20g s20h; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
use s20g; timeout 80 python tools/device/s16err.py g > $OUT/err_g.txt 2>&1
use s20h; timeout 80 python tools/device/s16err.py h > $OUT/err_h.txt 2>&1
sed 's/^[^ ]* //' $OUT/err_g.txt > /tmp/eg; sed 's/^[^ ]* //' $OUT/err_h.txt > /tmp/eh
echo "err lines g $(wc -l < /tmp/eg) h $(wc -l < /tmp/eh) differing $(diff /tmp/eg /tmp/eh | grep -c '^<')" | tee $OUT/summary.txt
for r in 1 2; do for B in s20g s20h; do use $B
timeout 60 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6 --label $B 2>&1 | grep "^\[" | cut -c1-90 | tee -a $OUT/summary.txt
done; done
use s20h
timeout 120 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma or placements or ordering" 2>&1 | tail -2 | tee -a $OUT/summary.txt
timeout 230 python benchmarks/bench_window_attention.py --configs 0,5,6,7 --out $OUT/win-s20h-n64.json > $OUT/win-s20h-n64.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt
grep -A12 "^Bars" $OUT/win-s20h-n64.log | tee -a $OUT/summary.txt
