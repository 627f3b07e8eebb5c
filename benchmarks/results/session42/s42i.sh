#!/usr/bin/env bash
# Session 42 run I (validation, s42h's kernels = the source as committed: run B's fold and the bm build
# in the preprocess grid): window suite without the subprocess tests, extremes / random, modules /
# swap / CPB in three processes; then compute-sanitizer (memcheck, racecheck, synccheck) alone.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s42h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 420 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runI-window.txt 2>&1; echo "rc $?" >> $OUT/runI-window.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py > $OUT/runI-extremes.txt 2>&1; echo "rc $?" >> $OUT/runI-extremes.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py > $OUT/runI-modules.txt 2>&1; echo "rc $?" >> $OUT/runI-modules.txt) &
wait
for f in $OUT/runI-window.txt $OUT/runI-extremes.txt $OUT/runI-modules.txt; do echo "== $f"; tail -n 3 $f; done
echo "suites done $(( $(date +%s) - t0 )) s"
SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family window" timeout 160 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runI-san.txt 2>&1; echo "rc $?" >> $OUT/runI-san.txt
rm -f $OUT/san/*.log $OUT/san/*.out
tail -n 5 $OUT/runI-san.txt
grep -h -E "^FAILED|^ERROR" $OUT/runI-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
