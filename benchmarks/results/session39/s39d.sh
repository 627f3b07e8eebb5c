#!/usr/bin/env bash
# Session 39 run D: the local CUDA suites on s39c (run C's 300-s single process timed out at ~45 %
# with no failure): three processes.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s39c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 420 python -m pytest -q -m cuda tests/test_local_attention.py -k "subprocess" > $OUT/runD-sub.txt 2>&1; echo "rc $?" >> $OUT/runD-sub.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_local_attention.py -k "not subprocess" > $OUT/runD-attn.txt 2>&1; echo "rc $?" >> $OUT/runD-attn.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py > $OUT/runD-other.txt 2>&1; echo "rc $?" >> $OUT/runD-other.txt) &
wait
for f in $OUT/runD-*.txt; do echo "== $f"; tail -2 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runD-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
