#!/usr/bin/env bash
# Session 38 run G: the final build s38f (run F's, carried): the window suite's non-subprocess tests,
# extremes / random problems and the op layer (every d = 64, N <= 64 forward now reads bias and mask
# itself); then the benchmark's d = 64 row with every peer.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s38f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runG-window.txt 2>&1; echo "rc $?" >> $OUT/runG-window.txt) &
(timeout 300 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py > $OUT/runG-extremes.txt 2>&1; echo "rc $?" >> $OUT/runG-extremes.txt) &
(timeout 300 python -X faulthandler -m pytest -q -m cuda tests/test_qk_inv_norm.py tests/test_errors.py tests/test_compile_opcheck.py tests/test_qkvpacked.py tests/test_lifecycle.py > $OUT/runG-ops.txt 2>&1; echo "rc $?" >> $OUT/runG-ops.txt) &
wait
for f in $OUT/runG-*.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runG-*.txt | head -20
timeout 200 python benchmarks/bench_window_attention.py --configs 8 --out $OUT/runG-bench8.json > $OUT/runG-bench8.log 2>&1
tail -12 $OUT/runG-bench8.log
echo "total $(( $(date +%s) - t0 )) s"
