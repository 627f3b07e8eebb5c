#!/usr/bin/env bash
# session 19 run 1: build b (wgmma forward also at Npad 64): errors on/off, wgmma tests, A/B timing N <= 64.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s19b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_WINDOW_WGMMA_SMALL=0 timeout 150 python tools/device/s16err.py off > $OUT/err.txt 2>&1
timeout 150 python tools/device/s16err.py on >> $OUT/err.txt 2>&1
echo err rc $? | tee $OUT/summary.txt
for r in 1 2; do for S in 0 1; do
FWA_WINDOW_WGMMA_SMALL=$S timeout 90 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6 --label small$S 2>&1 | grep "^\[" | cut -c1-80 | tee -a $OUT/summary.txt
done; done
for S in 0 1; do FWA_WINDOW_WGMMA_SMALL=$S timeout 60 python tools/device/s18t.py small$S 4096 3 64 64 | tee -a $OUT/summary.txt; done
for G in 1 2 4; do FWA_FWD_WG=$G timeout 60 python tools/device/s18t.py wg$G 4096 3 64 64 | head -2 | tee -a $OUT/summary.txt; done
timeout 240 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma or placements" 2>&1 | tail -3 | tee -a $OUT/summary.txt
