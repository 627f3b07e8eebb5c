#!/usr/bin/env bash
# Session 39 run H: the sliding-window benchmark at configs 2, 3 (d = 128, the deferred P v) with
# every peer, no scaling check, on s39f; then the per-kernel times of configs 2, 3.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s39f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 420 python benchmarks/bench_sliding_window.py --configs 2,3 --no-scaling --out $OUT/sliding-nvidia-h100-80gb-hbm3-session39-configs23.json > $OUT/runH-bench23.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runH-bench23.log | tail -40
