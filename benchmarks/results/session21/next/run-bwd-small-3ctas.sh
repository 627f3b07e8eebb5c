#!/usr/bin/env bash
# Next session: tools/patches/bwd-small-3-ctas-UNTESTED.patch (the small-window backward at 3 CTAs
# per SM, d <= 32). Build two .so files locally first (HEAD = base, HEAD + patch = small3), carry
# them as tools/device/{base,small3}_so/_C.abi3.so.xz, and copy tools/device/s22smallgrad.py
# (benchmarks/results/session21/next/) into tools/device.
export PYTHONPATH=$PWD
for B in base small3; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
use base;   timeout 150 python tools/device/s22smallgrad.py base SAVE /tmp/g.pt > $OUT/grad_base.txt 2>&1
use small3; timeout 150 python tools/device/s22smallgrad.py small3 CMP /tmp/g.pt > $OUT/grad_small3.txt 2>&1
grep -c ": ok" $OUT/grad_small3.txt | sed 's/^/float64 checks ok: /' | tee $OUT/summary.txt
grep "vs other" $OUT/grad_small3.txt | tee -a $OUT/summary.txt
# 3 CTAs per SM resident? (launch__occupancy_limit_shared_mem should read 3)
timeout 120 ncu --metrics launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum -k regex:bwd_small -c 1 python tools/device/s20fb.py 4096 3 64 8 > $OUT/ncu_small3.txt 2>&1
grep -E "occupancy_limit|registers_per|warps_active|duration" $OUT/ncu_small3.txt | tee -a $OUT/summary.txt
for r in 1 2; do for B in base small3; do use $B
timeout 100 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,8 --label $B 2>&1 | grep "^\[" | cut -c1-100 | tee -a $OUT/summary.txt
done; done
use small3
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py 2>&1 | tail -2 | tee -a $OUT/summary.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 150 bash tests/gpu/run_sanitizers.sh /tmp/san > $OUT/san.txt 2>&1
echo san rc $? | tee -a $OUT/summary.txt; grep -i "error summary" $OUT/san.txt | sort | uniq -c | tee -a $OUT/summary.txt
