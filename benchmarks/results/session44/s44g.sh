#!/usr/bin/env bash
# Session 44 run G: the host-trim build (e15b408) on the broader CUDA suites: extremes, random
# problems, argument errors, the sliding-window extremes / random problems / tile ranges.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44g G
rm -f $OUT/s44g.so.xz
timeout 400 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py tests/test_errors.py > $OUT/runG-extremes.txt 2>&1 &
timeout 400 python -m pytest -q -m cuda tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py tests/test_local_lifecycle.py > $OUT/runG-local.txt 2>&1 &
wait
echo "end $(( $(date +%s) - t0 )) s"
tail -n 3 $OUT/runG-extremes.txt $OUT/runG-local.txt
