#!/usr/bin/env bash
# Session 42 run L (validation, s42k's kernels): window subprocess tests, window suite, extremes /
# random + modules / swap / CPB in three processes; then compute-sanitizer alone.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s42k_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py -k subprocess > $OUT/runL-sub.txt 2>&1; echo "rc $?" >> $OUT/runL-sub.txt) &
(timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runL-window.txt 2>&1; echo "rc $?" >> $OUT/runL-window.txt) &
(timeout 400 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py tests/test_modules.py tests/test_swap.py tests/test_cpb.py > $OUT/runL-other.txt 2>&1; echo "rc $?" >> $OUT/runL-other.txt) &
wait
for f in $OUT/runL-sub.txt $OUT/runL-window.txt $OUT/runL-other.txt; do echo "== $f"; tail -n 3 $f; done
echo "suites done $(( $(date +%s) - t0 )) s"
SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family window" timeout 150 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runL-san.txt 2>&1; echo "rc $?" >> $OUT/runL-san.txt
rm -f $OUT/san/*.log $OUT/san/*.out
tail -n 5 $OUT/runL-san.txt
grep -h -E "^FAILED|^ERROR" $OUT/runL-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
