#!/usr/bin/env bash
# Session 32 run H: build s32e (the row-tail forward kernel, the backward's narrow last blocks at Npad 192): the window-op CUDA
# suites in 3 concurrent processes (window; extremes + packed + random; modules / swap / CPB /
# compile-opcheck / dropout / lifecycle).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s32e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 420 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/runH-window.txt 2>&1; echo "rc $?" >> $OUT/runH-window.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_random_problems.py > $OUT/runH-extremes.txt 2>&1; echo "rc $?" >> $OUT/runH-extremes.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_lifecycle.py > $OUT/runH-modules.txt 2>&1; echo "rc $?" >> $OUT/runH-modules.txt) &
wait
for f in $OUT/runH-*.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
