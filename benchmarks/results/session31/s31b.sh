#!/usr/bin/env bash
# Session 31 run B: build s31a (narrow last key blocks in the wgmma forward): the window-op CUDA
# suites in 3 concurrent processes (window; extremes + packed + random; modules / swap / CPB /
# compile-opcheck / dropout / lifecycle).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s31a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 420 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/runB-window.txt 2>&1; echo "rc $?" >> $OUT/runB-window.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_random_problems.py > $OUT/runB-extremes.txt 2>&1; echo "rc $?" >> $OUT/runB-extremes.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_lifecycle.py > $OUT/runB-modules.txt 2>&1; echo "rc $?" >> $OUT/runB-modules.txt) &
wait
for f in $OUT/runB-*.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
