#!/usr/bin/env bash
# session 22 run B: the hash script's abort (grp vs base), then small3 / small3pdl vs base (float64 grads, occupancy, time_ops A/B)
export PYTHONPATH=$PWD
for B in base grp small3 small3pdl; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
for B in grp base; do use $B; timeout 120 python tools/device/s21hash.py $B > $OUT/hash_$B.txt 2>&1; echo "hash $B rc $? lines $(wc -l < $OUT/hash_$B.txt)" | tee -a $OUT/summary.txt; tail -4 $OUT/hash_$B.txt | cut -c1-300 | tee -a $OUT/summary.txt; done
use base;   timeout 150 python tools/device/s22smallgrad.py base SAVE /tmp/g.pt > $OUT/grad_base.txt 2>&1
use small3pdl; timeout 150 python tools/device/s22smallgrad.py small3pdl CMP /tmp/g.pt > $OUT/grad_small3pdl.txt 2>&1
grep -c ": ok" $OUT/grad_small3pdl.txt | sed 's/^/float64 checks ok: /' | tee -a $OUT/summary.txt
grep -E "FAIL|vs other|bitwise" $OUT/grad_small3pdl.txt | head -30 | tee -a $OUT/summary.txt
timeout 120 ncu --metrics launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum -k regex:bwd_small -c 1 python tools/device/s20fb.py 4096 3 64 8 > $OUT/ncu_small3.txt 2>&1
grep -E "occupancy_limit|registers_per|warps_active|duration" $OUT/ncu_small3.txt | tee -a $OUT/summary.txt
for r in 1 2; do for B in base small3 small3pdl; do use $B
timeout 100 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,8 --label $B 2>&1 | grep "^\[" | cut -c1-110 | tee -a $OUT/summary.txt
done; done
use small3pdl; FWA_WINDOW_PDL=0 timeout 100 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,8 --label pdl0 2>&1 | grep "^\[" | cut -c1-110 | tee -a $OUT/summary.txt
