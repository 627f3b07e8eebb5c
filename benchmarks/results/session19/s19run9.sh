#!/usr/bin/env bash
# session 19 run 9: build f (Npad 64: S issued with the V2 norms' products, one wait) vs b: shas, A/B timing N <= 64.
export PYTHONPATH=$PWD
for V in b f; do
python tools/device/unxz.py tools/device/s19${V}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 150 python tools/device/s16err.py $V > $OUT/err_$V.txt 2>&1
done
python3 - <<'PY' | tee -a $OUT/summary.txt
import os
b=[l.split(":",1)[1] for l in open(os.environ["OUT"]+"/err_b.txt") if l.startswith("[b]")]
c=[l.split(":",1)[1] for l in open(os.environ["OUT"]+"/err_f.txt") if l.startswith("[f]")]
print("err lines", len(b), len(c), "identical", sum(x==y for x,y in zip(b,c)))
PY
for r in 1 2 3; do for V in b f; do
python tools/device/unxz.py tools/device/s19${V}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 60 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6 --label $V 2>&1 | grep "^\[" | cut -c1-62 | tee -a $OUT/summary.txt
done; done
