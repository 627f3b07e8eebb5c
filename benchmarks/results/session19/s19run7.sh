#!/usr/bin/env bash
# session 19 run 7: build d (strip formed in the wgmma forward from bias + mask, one round trip per round) vs b: shas, A/B timing, tests.
export PYTHONPATH=$PWD
for V in b d; do
python tools/device/unxz.py tools/device/s19${V}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 150 python tools/device/s16err.py $V > $OUT/err_$V.txt 2>&1
done
python3 - <<'PY' | tee -a $OUT/summary.txt
import os
b=[l.split(":",1)[1] for l in open(os.environ["OUT"]+"/err_b.txt") if l.startswith("[b]")]
c=[l.split(":",1)[1] for l in open(os.environ["OUT"]+"/err_d.txt") if l.startswith("[d]")]
print("err lines", len(b), len(c), "identical", sum(x==y for x,y in zip(b,c)))
PY
for r in 1 2; do for V in b d; do
python tools/device/unxz.py tools/device/s19${V}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 120 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,1,2,3 --label $V 2>&1 | grep "^\[" | cut -c1-62 | tee -a $OUT/summary.txt
done; done
for V in b d; do python tools/device/unxz.py tools/device/s19${V}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 60 python tools/device/s19prof.py $V 5 2>&1 | grep "^\[" | head -4 | tee -a $OUT/summary.txt; done
timeout 150 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma" 2>&1 | tail -2 | tee -a $OUT/summary.txt
