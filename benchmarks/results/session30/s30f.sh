#!/usr/bin/env bash
# Session 30 run F (s30e = main 73828e6: session 29's kernels + the CPB op's C++ autocast guard):
# bench_models window16, swapped and ceiling, eager and compiled, with the host issue time per step
# (host-bound flag), JSON / PNG under $OUT.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s30e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 560 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap,swap_compile,ceiling,ceiling_compile --out $OUT/models-w16-s30.json > $OUT/models-w16-s30.log 2>&1
tail -30 $OUT/models-w16-s30.log
