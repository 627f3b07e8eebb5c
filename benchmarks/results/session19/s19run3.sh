#!/usr/bin/env bash
# session 19 run 3: build c (bias and mask read by the wgmma forward, no bm kernel) vs b: shas, A/B timing; swap autocast xfail check.
export PYTHONPATH=$PWD
for V in b c; do
python tools/device/unxz.py tools/device/s19${V}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 150 python tools/device/s16err.py $V > $OUT/err_$V.txt 2>&1
done
python3 - <<'PY' | tee -a $OUT/summary.txt
import os
b=[l.split(":",1)[1] for l in open(os.environ["OUT"]+"/err_b.txt") if l.startswith("[b]")]
c=[l.split(":",1)[1] for l in open(os.environ["OUT"]+"/err_c.txt") if l.startswith("[c]")]
print("err lines", len(b), len(c), "identical", sum(x==y for x,y in zip(b,c)))
PY
for r in 1 2; do for V in b c; do
python tools/device/unxz.py tools/device/s19${V}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 120 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,1,2,3 --label $V 2>&1 | grep "^\[" | cut -c1-62 | tee -a $OUT/summary.txt
done; done
timeout 100 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma" 2>&1 | tail -2 | tee -a $OUT/summary.txt
for S in 0 1; do FWA_WINDOW_WGMMA_SMALL=$S timeout 100 python -m pytest -q -m cuda tests/test_swap.py -k "autocast_swapped_model" -rxX 2>&1 | tail -4 | tee -a $OUT/summary.txt; done
