#!/usr/bin/env bash
# Session 29 run G (s29g = main + run E's CPB kernels + the wgmma forward's fixed softmax shift,
# bf16 at Npad 256 only; every other forward instantiation SASS-identical to main): window /
# extremes / packed / random CUDA tests, the forward's kernel time at N = 256, and
# bench_window_attention configs 1, 2 (N = 256) with every peer, JSON under $OUT.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s29g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 300 python -m pytest -q -m cuda tests/test_extremes.py tests/test_window_attention.py tests/test_qkvpacked.py tests/test_random_problems.py 2>&1 | tail -6
timeout 60 python tools/kernel_breakdown.py --configs 1,2 --iters 20 2>&1 | grep -E "GPU time|fwd_wgmma"
timeout 200 python benchmarks/bench_window_attention.py --configs 1,2 --out $OUT/window-s29g.json > $OUT/window-s29g.log 2>&1
tail -40 $OUT/window-s29g.log
