#!/usr/bin/env bash
# session 22 run A: grouped tile-major build (grp) vs base (HEAD): hashes vs s21c, order test, per-kernel A/B, sanitizers (local) on grp
export PYTHONPATH=$PWD
for B in base grp; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee $OUT/summary.txt
use grp; timeout 120 python tools/device/s21hash.py d > $OUT/hash_d.txt 2>&1
sed 's/^[^ ]* //' benchmarks/results/session21/hash_c.txt > /tmp/hc; sed 's/^[^ ]* //' $OUT/hash_d.txt > /tmp/hd
echo "hash lines c $(wc -l < /tmp/hc) d $(wc -l < /tmp/hd) differing $(diff /tmp/hc /tmp/hd | grep -c '^<')" | tee -a $OUT/summary.txt
cp tools/device/grp_tests/test_local_attention.py tests/test_local_attention.py
timeout 100 python -m pytest -q -m cuda tests/test_local_attention.py -k "cta_order" 2>&1 | tail -2 | tee -a $OUT/summary.txt
for r in 1 2; do for G in base default all 16 64; do
  case $G in base) use base; ENV="";; default) use grp; ENV="";; all) ENV="FWA_LOCAL_TILE_MAJOR=1";; *) ENV="FWA_LOCAL_TILE_GROUP=$G";; esac
  env $ENV timeout 60 python tools/local_breakdown.py --configs 4,0 --impls ours --iters 20 > $OUT/bd_${G}_$r.txt 2>&1
  echo "group $G round $r: $(grep -E '==|local_attn' $OUT/bd_${G}_$r.txt | awk '/==/{printf "| %s %s ", $3, $(NF-3)} /local_attn/{printf "%s %s ", $1, $4}')" | sed 's/local_attn_//g' | tee -a $OUT/summary.txt
done; done
use grp
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family local" timeout 200 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
echo san rc $? | tee -a $OUT/summary.txt; tail -4 $OUT/san.txt | tee -a $OUT/summary.txt
