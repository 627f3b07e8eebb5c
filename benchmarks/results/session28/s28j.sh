#!/usr/bin/env bash
# Session 28 run J (main's kernels): bench_models window16, swapped / ceiling, eager and compiled,
# with the host issue time per step (host-bound flag).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 500 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap,swap_compile,ceiling,ceiling_compile --out $OUT/models-w16-host.json > $OUT/models-w16-host.log 2>&1
tail -25 $OUT/models-w16-host.log
