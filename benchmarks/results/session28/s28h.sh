#!/usr/bin/env bash
# Session 28 run H (s28a's build = main's kernels): bench_models swinv2_tiny_window16_256, all six
# variants (the issue-3 bar), JSON / PNG under $OUT.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 570 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --out $OUT/models-w16.json > $OUT/models-w16.log 2>&1
tail -40 $OUT/models-w16.log
