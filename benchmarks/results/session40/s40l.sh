#!/usr/bin/env bash
# Session 40 run L: the window-op CUDA suites on s40g (the final window kernels; the later commits
# changed sliding-window sources only, with identical sm_90a SASS): the window suite's subprocess
# tests, extremes / random problems, and modules / swap / CPB (Swin window 12 = N 144 in the models),
# three processes.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 500 python -m pytest -q -m cuda tests/test_window_attention.py -k "subprocess" > $OUT/runL-sub.txt 2>&1; echo "rc $?" >> $OUT/runL-sub.txt) &
(timeout 500 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py > $OUT/runL-extremes.txt 2>&1; echo "rc $?" >> $OUT/runL-extremes.txt) &
(timeout 500 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py > $OUT/runL-modules.txt 2>&1; echo "rc $?" >> $OUT/runL-modules.txt) &
wait
for f in $OUT/runL-*.txt; do echo "== $f"; tail -2 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runL-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
