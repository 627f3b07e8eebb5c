#!/usr/bin/env bash
# Session 32 run G: build s32e. The wgmma forward's main grid at 4 (default plan), 3 and 2
# warpgroups per CTA (FWA_FWD_WG) with the row tail: a main CTA of 3 warpgroups leaves registers
# and shared memory for a row-tail CTA beside it on every SM.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s32e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
R=benchmarks/results/session32
for wg in plan 3 2; do
  if [ $wg = plan ]; then python $R/row_tail_ab.py; else FWA_FWD_WG=$wg python $R/row_tail_ab.py | sed "s/^/WG=$wg /"; fi
  if [ $wg = plan ]; then FWA_WINDOW_ROW_TAIL=0 python $R/row_tail_ab.py; else FWA_WINDOW_ROW_TAIL=0 FWA_FWD_WG=$wg python $R/row_tail_ab.py | sed "s/^/WG=$wg /"; fi
done 2>&1 | grep -v N196 | tee $OUT/runG-wg.txt
