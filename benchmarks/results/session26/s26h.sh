#!/usr/bin/env bash
# Session 26 run H: bench_sliding_window configs 2, 3 (every peer, scaling check) with the
# warp-specialised forward at d = 128 (run G's build).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 570 python benchmarks/bench_sliding_window.py --configs 2,3 --out $OUT/sliding-nvidia-h100-80gb-hbm3-session26-configs23-ws.json > $OUT/bench_sliding23.log 2>&1
echo bench rc $?; grep -E "^(block|win|causal)|PASS|FAIL|summary" $OUT/bench_sliding23.log
