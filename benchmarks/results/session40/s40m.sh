#!/usr/bin/env bash
# Session 40 run M: host time of the window op's fwd+bwd (host_profile.py) at bench configs 6
# ((256, 12, 64) V2), 7 (V1 N = 49) and 3 (N = 144), bf16, on s40g.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 300 python benchmarks/results/session40/host_profile.py 6 7 3 > $OUT/runM-host.txt 2>&1
echo "rc $?"
grep -E "^== " $OUT/runM-host.txt
