#!/usr/bin/env bash
# Session 29 run H (s29g's build): the CUDA test suites of the window op, its modules and the CPB op,
# in three concurrent pytest processes (run G's single process reached its 300-s limit at 98 %).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s29g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 560 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/tH1.txt 2>&1 &
timeout 560 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_random_problems.py > $OUT/tH2.txt 2>&1 &
timeout 560 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_compile_opcheck.py tests/test_dropout.py > $OUT/tH3.txt 2>&1 &
wait
for f in $OUT/tH1.txt $OUT/tH2.txt $OUT/tH3.txt; do echo "== $f"; grep -E "passed|failed|FAILED|Error" $f | tail -8; done
