#!/usr/bin/env bash
# session 20 run 4: build d (= a + build_bm without per-thread index divisions) against a.
export PYTHONPATH=$PWD
for B in s20a s20d; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
use s20a; timeout 150 python tools/device/s16err.py a > $OUT/err_a.txt 2>&1
use s20d; timeout 150 python tools/device/s16err.py d > $OUT/err_d.txt 2>&1
sed 's/^[^ ]* //' $OUT/err_a.txt > /tmp/ea; sed 's/^[^ ]* //' $OUT/err_d.txt > /tmp/ed
echo "err lines a $(wc -l < /tmp/ea) d $(wc -l < /tmp/ed) differing $(diff /tmp/ea /tmp/ed | grep -c '^<')" | tee $OUT/summary.txt
for B in s20a s20d; do use $B; for C in 1 5; do timeout 60 python tools/device/s19prof.py $B $C 2>&1 | grep -E "build_bm|wgmma|median" | tee -a $OUT/summary.txt; done; done
for r in 1 2; do for B in s20a s20d; do use $B
timeout 120 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,1,2,3 --label $B 2>&1 | grep "^\[" | cut -c1-90 | tee -a $OUT/summary.txt
done; done
use s20d
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_extremes.py -x 2>&1 | tail -3 | tee -a $OUT/summary.txt
