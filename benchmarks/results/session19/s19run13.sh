#!/usr/bin/env bash
# session 19 run 13: build g (= HEAD + FWA_FWD_CHUNKS for the wgmma launcher): chunk-count sweep at N <= 64 and N = 144 / 256.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s19g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2; do for C in plan 1 2 4 16; do
if [ $C = plan ]; then unset FWA_FWD_CHUNKS; else export FWA_FWD_CHUNKS=$C; fi
timeout 60 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,3,1 --label c$C 2>&1 | grep "^\[" | cut -c1-62 | tee -a $OUT/summary.txt
done; done
