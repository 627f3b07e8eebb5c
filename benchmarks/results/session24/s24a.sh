#!/usr/bin/env bash
# Session 24 run A: HEAD 7495d57 kernels. session 23's next-session script (ncu key side + wg query side; Npad-128 timing).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s24a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
cp tools/device/s20fb.py benchmarks/results/session20/s20fb.py 2>/dev/null || true
bash benchmarks/results/session23/next/run-next.sh > $OUT/next.txt 2>&1
echo rc $? >> $OUT/next.txt
