#!/usr/bin/env bash
# Session 34 run F: build s34e (main e8256bf's kernels): the window-op CUDA suites in 3
# concurrent processes (window; extremes + packed + random; modules / swap / CPB / compile-opcheck /
# dropout / lifecycle).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s34e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 450 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/runF-window.txt 2>&1; echo "rc $?" >> $OUT/runF-window.txt) &
(timeout 450 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_random_problems.py > $OUT/runF-extremes.txt 2>&1; echo "rc $?" >> $OUT/runF-extremes.txt) &
(timeout 450 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_lifecycle.py > $OUT/runF-modules.txt 2>&1; echo "rc $?" >> $OUT/runF-modules.txt) &
wait
for f in $OUT/runF-*.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
