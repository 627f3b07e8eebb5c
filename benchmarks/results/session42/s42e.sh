#!/usr/bin/env bash
# Session 42 run E (validation, s42b's kernels = the source as committed: the fold with warpgroup 1
# taking the tail rows): window suite without the subprocess tests, extremes / random, modules /
# swap / CPB in three processes; then compute-sanitizer (memcheck, racecheck, synccheck) alone.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s42b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 420 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runE-window.txt 2>&1; echo "rc $?" >> $OUT/runE-window.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py > $OUT/runE-extremes.txt 2>&1; echo "rc $?" >> $OUT/runE-extremes.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py > $OUT/runE-modules.txt 2>&1; echo "rc $?" >> $OUT/runE-modules.txt) &
wait
for f in $OUT/runE-window.txt $OUT/runE-extremes.txt $OUT/runE-modules.txt; do echo "== $f"; tail -n 3 $f; done
echo "suites done $(( $(date +%s) - t0 )) s"
SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family window" timeout 160 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runE-san.txt 2>&1; echo "rc $?" >> $OUT/runE-san.txt
rm -f $OUT/san/*.log $OUT/san/*.out
tail -n 5 $OUT/runE-san.txt
grep -h -E "^FAILED|^ERROR" $OUT/runE-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
