#!/usr/bin/env bash
# Next session (checklist of benchmarks/NOTES.md, session 23): needs the product's .so in place.
# 1. ncu of the key side (kWgmma form) and the wg query side after session 23's V2 factor change
#    (run C's profile predates it), (1024, 6, 256), V2 + bias + mask, bf16.
timeout 150 ncu -k regex:"bwd_kv|bwd_q" -c 2 --set full python benchmarks/results/session20/s20fb.py 1024 6 256 16 > $OUT/ncu.txt 2>&1
grep -E "bwd_kv_kernel|bwd_q_wg_kernel|Duration|Registers Per|Issue Slots Busy|No Eligible|Executed Instructions  " $OUT/ncu.txt
# 2. the wg query side at Npad 128 (N = 100, swinv2 window10 shapes), off / on, 2 rounds.
#    (Session 24 ran this part as a standalone copy of kernel_breakdown's loop, since replaced by --shape.)
for r in 1 2; do for m in 0 all; do echo "== FWA_WINDOW_BWD_Q_WG=$m"; FWA_WINDOW_BWD_Q_WG=$m PYTHONPATH=$PWD timeout 60 python tools/kernel_breakdown.py --shape 1024,4,100,32,16,10,v2; done; done
