#!/usr/bin/env bash
# session 20 run 1: build a (wgmma forward descriptors as offsets of two per-warpgroup bases,
# warp-uniform group index) against b (session 19 HEAD kernels): bitwise errors, A/B timing, tests.
export PYTHONPATH=$PWD
for B in s19b s20a; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
use s19b; timeout 150 python tools/device/s16err.py b > $OUT/err_b.txt 2>&1
use s20a; timeout 150 python tools/device/s16err.py a > $OUT/err_a.txt 2>&1
sed 's/^[^ ]* //' $OUT/err_b.txt > /tmp/eb; sed 's/^[^ ]* //' $OUT/err_a.txt > /tmp/ea
echo "err lines b $(wc -l < /tmp/eb) a $(wc -l < /tmp/ea) differing $(diff /tmp/eb /tmp/ea | grep -c '^<')" | tee $OUT/summary.txt
for r in 1 2; do for B in s19b s20a; do use $B
timeout 120 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,1,2,3 --label $B 2>&1 | grep "^\[" | cut -c1-90 | tee -a $OUT/summary.txt
done; done
use s20a
timeout 240 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma or placements" 2>&1 | tail -3 | tee -a $OUT/summary.txt
