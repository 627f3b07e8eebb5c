#!/usr/bin/env bash
# Session 26 run B: the long sliding-window configs (2: win(1024,0) B2 H16 L16384 d128; 3:
# win(4096,0) B1 H32/8 L32768 d128) with every peer and the scaling check, on s26a's kernels
# (last measured with session 12's kernels).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 570 python benchmarks/bench_sliding_window.py --configs 2,3 --out $OUT/sliding-nvidia-h100-80gb-hbm3-session26-configs23.json > $OUT/bench_sliding23.log 2>&1
echo bench rc $?; tail -30 $OUT/bench_sliding23.log
