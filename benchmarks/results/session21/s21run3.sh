#!/usr/bin/env bash
# session 21 run 3: build s21c (= s21b + half steps in the 128-key d = 64 wgmma forward: a last step
# whose second tile lies past the band issues m64n64 S and 4 P v k-steps) against s21b: output /
# gradient hashes, per-kernel A/B, local CUDA tests on s21c.
export PYTHONPATH=$PWD
for B in s21b s21c; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
use s21b; timeout 120 python tools/device/s21hash.py b > $OUT/hash_b.txt 2>&1
use s21c; timeout 120 python tools/device/s21hash.py c > $OUT/hash_c.txt 2>&1
sed 's/^[^ ]* //' $OUT/hash_b.txt > /tmp/hb; sed 's/^[^ ]* //' $OUT/hash_c.txt > /tmp/hc
echo "hash lines b $(wc -l < /tmp/hb) c $(wc -l < /tmp/hc) differing $(diff /tmp/hb /tmp/hc | grep -c '^<')" | tee $OUT/summary.txt
for r in 1 2; do for B in s21b s21c; do use $B
timeout 100 python tools/local_breakdown.py --configs 4,0 --impls ours --iters 20 > $OUT/bd_${B}_$r.txt 2>&1
echo "$B round $r" | tee -a $OUT/summary.txt; grep -E "==|fwd_wgmma" $OUT/bd_${B}_$r.txt | cut -c1-100 | tee -a $OUT/summary.txt
done; done
use s21c
timeout 400 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py -k "not subprocess" 2>&1 | tail -3 | tee -a $OUT/summary.txt
