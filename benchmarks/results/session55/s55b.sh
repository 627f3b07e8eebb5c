#!/usr/bin/env bash
# Session 55 run B: main's build after run A (the item shift only where it saves >= 3 % of the
# steps): build; bitwise against session 54's main (.devbuild/s54e.so.xz; every case of
# tools/local_bitwise.py keeps shift 0 or has 64-key steps / first key tile 0: 48 of 48 expected);
# the sliding CUDA suites (op with the new shift tests, lifecycle, extremes, random problems).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s55b B
fwa_bitwise_vs s54e B tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 420 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py -x --durations=15 > $OUT/runB-tests.txt 2>&1
tail -22 $OUT/runB-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
