#!/usr/bin/env bash
# session 20 run 9: build e (= ea464de kernels): the remaining CUDA test files (extremes, packed,
# dropout, random problems, modules, swap, position bias).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s20e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 330 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_dropout.py tests/test_random_problems.py 2>&1 | tail -3 | tee $OUT/summary.txt
timeout 200 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py 2>&1 | tail -3 | tee -a $OUT/summary.txt
