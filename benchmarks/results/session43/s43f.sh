#!/usr/bin/env bash
# Session 43 run F: the landed kernels (s43b's .so, = main's csrc) on the broader suites: extremes
# and random problems, and modules / swap / CPB, side by side.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s43b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 230 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py > $OUT/runF-extremes.txt 2>&1 &
timeout 230 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py > $OUT/runF-modules.txt 2>&1 &
wait
tail -n 2 $OUT/runF-extremes.txt $OUT/runF-modules.txt
