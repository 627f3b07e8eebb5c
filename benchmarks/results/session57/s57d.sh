#!/usr/bin/env bash
# Session 57 run D (the session's last 3 device minutes, on run C's warm machine): config 2 alone,
# ours and FlexAttention, with run B's build. Cut by its 170 s limit while FlexAttention compiled
# (runD-sliding-config2-cut.log): configs 2 and 3 stay unmeasured on this session's kernels.
export PYTHONPATH=$PWD
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s57b.so.xz flash_window_attn/_C.abi3.so
timeout 170 python benchmarks/bench_sliding_window.py --configs 2 --impls ours,flex --no-scaling --out $OUT/sliding-config2.json > $OUT/sliding-config2.log 2>&1
echo rc $?
