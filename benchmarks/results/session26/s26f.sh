#!/usr/bin/env bash
# Session 26 run F: bench_sliding_window configs 0, 1, 4 (every peer) on b55643b's kernels (the
# persistent warp-specialised d = 64 forward).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 500 python benchmarks/bench_sliding_window.py --configs 0,1,4 --no-scaling --out $OUT/sliding-nvidia-h100-80gb-hbm3-session26-configs014.json > $OUT/bench_sliding014.log 2>&1
echo bench rc $?; grep -E "^(block|win|causal)|PASS|FAIL|summary" $OUT/bench_sliding014.log
