#!/usr/bin/env bash
# Session 39 run G: the local CUDA suites on s39f (three processes: the subprocess tests, the rest of
# test_local_attention, extremes / random / tile ranges).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s39f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 320 python -m pytest -q -m cuda tests/test_local_attention.py -k "subprocess" --durations=4 > $OUT/runG-sub.txt 2>&1; echo "rc $?" >> $OUT/runG-sub.txt) &
(timeout 320 python -m pytest -q -m cuda tests/test_local_attention.py -k "not subprocess" > $OUT/runG-attn.txt 2>&1; echo "rc $?" >> $OUT/runG-attn.txt) &
(timeout 320 python -m pytest -q -m cuda tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py > $OUT/runG-other.txt 2>&1; echo "rc $?" >> $OUT/runG-other.txt) &
wait
for f in $OUT/runG-*.txt; do echo "== $f"; tail -3 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runG-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
