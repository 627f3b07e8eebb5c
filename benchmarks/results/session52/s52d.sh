#!/usr/bin/env bash
# Session 52 run D: the change as committed (the scale folded into the exponent on the full steps of
# the wgmma / warp-specialised sliding forwards, and at d = 128 FlashAttention-4's rescale rule):
# build; the sliding CUDA suites (op, lifecycle, extremes, random problems); bench_sliding_window
# configs 0, 1 with every peer; GPU time base (.devbuild/s51d.so.xz) / new at configs 0, 2.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s52d D
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py -x > $OUT/runD-tests.txt 2>&1
tail -3 $OUT/runD-tests.txt
echo "tests done $(( $(date +%s) - t0 )) s"
timeout 200 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs01.log | tail -16
fwa_unpack .devbuild/s51d.so.xz /tmp/base.so
fwa_local_graph_ab 0 2
echo "end $(( $(date +%s) - t0 )) s"
