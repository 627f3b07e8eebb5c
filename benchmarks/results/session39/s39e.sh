#!/usr/bin/env bash
# Session 39 run E: what run D's 420-s limit cut off, on s39c: the warp-specialised forward on every
# grid (subprocess test), and the random sliding-window problems.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s39c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 450 python -m pytest -q -m cuda tests/test_local_attention.py -k "ws_fwd_every_grid or ws_fwd_never" --durations=3 > $OUT/runE-sub.txt 2>&1; echo "rc $?" >> $OUT/runE-sub.txt) &
(timeout 450 python -m pytest -q -m cuda tests/test_local_random.py --durations=3 > $OUT/runE-random.txt 2>&1; echo "rc $?" >> $OUT/runE-random.txt) &
wait
for f in $OUT/runE-*.txt; do echo "== $f"; tail -8 $f; done
echo "total $(( $(date +%s) - t0 )) s"
