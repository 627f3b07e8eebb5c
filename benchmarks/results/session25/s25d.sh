#!/usr/bin/env bash
# Session 25 run D: the window benchmark's N > 64 rows (configs 1-4, fp16 + bf16, all peers) on the
# current kernels (s24b = a84bdbf's build; HEAD's kernels are the same), for the README table.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s24b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 560 python benchmarks/bench_window_attention.py --configs 1,2,3,4 --out $OUT/nvidia-h100-80gb-hbm3-session25-large.json > $OUT/bench_window.log 2>&1
echo bench rc $?
tail -30 $OUT/bench_window.log
