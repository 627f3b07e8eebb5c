#!/usr/bin/env bash
# session 21 run 6: build s21d (= s21c with the tile-major order in groups of slices whose k / v fit
# 16 MB; FWA_LOCAL_TILE_GROUP=G sweeps): hashes against s21c, the order test, per-kernel A/B of the
# group size on causal and block256x16, then the bench configs 4, 0.
export PYTHONPATH=$PWD
for B in s21c s21d; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
use s21d; timeout 120 python tools/device/s21hash.py d > $OUT/hash_d.txt 2>&1
sed 's/^[^ ]* //' benchmarks/results/session21/hash_c.txt > /tmp/hc; sed 's/^[^ ]* //' $OUT/hash_d.txt > /tmp/hd
echo "hash lines c $(wc -l < /tmp/hc) d $(wc -l < /tmp/hd) differing $(diff /tmp/hc /tmp/hd | grep -c '^<')" | tee $OUT/summary.txt
timeout 100 python -m pytest -q -m cuda tests/test_local_attention.py -k "cta_order" 2>&1 | tail -2 | tee -a $OUT/summary.txt
for r in 1 2; do for G in default 0 all 8 16 64; do
  case $G in default) ENV="";; 0) ENV="FWA_LOCAL_TILE_MAJOR=0";; all) ENV="FWA_LOCAL_TILE_MAJOR=1";; *) ENV="FWA_LOCAL_TILE_GROUP=$G";; esac
  env $ENV timeout 100 python tools/local_breakdown.py --configs 4,0 --impls ours --iters 20 > $OUT/bd_${G}_$r.txt 2>&1
  echo "group $G round $r: $(grep -E '==|local_attn' $OUT/bd_${G}_$r.txt | awk '/==/{printf "| %s %s ", $3, $(NF-3)} /local_attn/{printf "%s %s ", $1, $4}')" | sed 's/local_attn_//g' | tee -a $OUT/summary.txt
done; done
timeout 200 python benchmarks/bench_sliding_window.py --configs 4,0 --no-scaling --out $OUT/sliding-s21d-configs40.json > $OUT/sliding-s21d-configs40.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt; grep -A6 "^config" $OUT/sliding-s21d-configs40.log | tee -a $OUT/summary.txt
