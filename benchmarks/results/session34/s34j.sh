#!/usr/bin/env bash
# Session 34 run J: build s34i (main's kernels, with the late epilogue): the window-op CUDA suites in 3
# concurrent processes (window; extremes + packed + random; modules / swap / CPB / compile-opcheck /
# dropout / lifecycle).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s34i_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 450 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/runJ-window.txt 2>&1; echo "rc $?" >> $OUT/runJ-window.txt) &
(timeout 450 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_random_problems.py > $OUT/runJ-extremes.txt 2>&1; echo "rc $?" >> $OUT/runJ-extremes.txt) &
(timeout 450 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_lifecycle.py > $OUT/runJ-modules.txt 2>&1; echo "rc $?" >> $OUT/runJ-modules.txt) &
wait
for f in $OUT/runJ-*.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
timeout 200 python benchmarks/bench_window_attention.py --configs 3,1 --out $OUT/runJ-bench.json > $OUT/runJ-bench.log 2>&1
echo "bench rc $?"
tail -8 $OUT/runJ-bench.log
