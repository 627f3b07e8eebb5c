#!/usr/bin/env bash
# Session 36 run D: build s36d (run C's kernel, final comments; tests: the tail kernel's results
# asserted bitwise equal to the warpgroup tile's, two cases with more items than warps). The
# window-op CUDA suites in 3 concurrent processes (session 34 run J's pattern), then the benchmark
# at configs 3 and 1.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runD-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runD-build.txt
grep -E " error|error:" $OUT/runD-build.txt | head -20
(timeout 420 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/runD-window.txt 2>&1; echo "rc $?" >> $OUT/runD-window.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_random_problems.py > $OUT/runD-extremes.txt 2>&1; echo "rc $?" >> $OUT/runD-extremes.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_lifecycle.py > $OUT/runD-modules.txt 2>&1; echo "rc $?" >> $OUT/runD-modules.txt) &
wait
for f in $OUT/runD-window.txt $OUT/runD-extremes.txt $OUT/runD-modules.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -E "^FAILED|Error" $OUT/runD-window.txt | head -10
timeout 100 python benchmarks/bench_window_attention.py --configs 3 --out $OUT/runD-bench.json > $OUT/runD-bench.log 2>&1
echo "bench rc $?"
tail -8 $OUT/runD-bench.log
