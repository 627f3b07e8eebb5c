#!/usr/bin/env bash
# Session 25 run J: attention dropout through the key-range query side (N = 300) and the Npad-192
# form (N = 144), plus the packed / module tests that run the backward at N > 64 (s25h = HEAD's kernels).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s25h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 420 python -m pytest -q -m cuda tests/test_dropout.py tests/test_qkvpacked.py tests/test_compile_opcheck.py tests/test_random_problems.py tests/test_modules.py tests/test_swap.py 2>&1 | tail -6
