#!/usr/bin/env bash
# session 20 run 2: build c (= a + P v of block kt - 1 overlapped with block kt's softmax; 3
# warpgroups at most at Npad >= 192, 168 registers) against a: bitwise errors, A/B timing, tests.
export PYTHONPATH=$PWD
for B in s20a s20c; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
use s20a; timeout 150 python tools/device/s16err.py a > $OUT/err_a.txt 2>&1
use s20c; timeout 150 python tools/device/s16err.py c > $OUT/err_c.txt 2>&1
sed 's/^[^ ]* //' $OUT/err_a.txt > /tmp/ea; sed 's/^[^ ]* //' $OUT/err_c.txt > /tmp/ec
echo "err lines a $(wc -l < /tmp/ea) c $(wc -l < /tmp/ec) differing $(diff /tmp/ea /tmp/ec | grep -c '^<')" | tee $OUT/summary.txt
for r in 1 2; do for B in s20a s20c; do use $B
timeout 100 python tools/time_ops.py --dtype bf16 --configs 1,2,3 --label $B 2>&1 | grep "^\[" | cut -c1-90 | tee -a $OUT/summary.txt
for NN in "2048 3 100 16" "1024 4 128 16" "512 4 192 16"; do timeout 60 python tools/device/s18t.py $B $NN | head -2 | tee -a $OUT/summary.txt; done
done; done
use s20c
for G in 1 2; do FWA_FWD_WG=$G timeout 60 python tools/device/s18t.py c-wg$G 512 4 256 16 | head -1 | tee -a $OUT/summary.txt; done
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma or placements" 2>&1 | tail -3 | tee -a $OUT/summary.txt
