#!/usr/bin/env bash
# Session 54 run C (main's kernels = run A's build, .devbuild/s54a.so.xz: 4 stages in the d = 64
# warp-specialised forward and in the key side): the sliding CUDA suites (op, lifecycle, extremes,
# random problems) and the sliding-window benchmark at configs 0, 1 (block256x16, win(256,256))
# and 4 (causal) with every peer.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s54a.so.xz flash_window_attn/_C.abi3.so
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py -x > $OUT/runC-tests.txt 2>&1
tail -3 $OUT/runC-tests.txt
echo "tests done $(( $(date +%s) - t0 )) s"
timeout 150 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench 0,1 rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs01.log | tail -16
timeout 100 python benchmarks/bench_sliding_window.py --configs 4 --no-scaling --out $OUT/sliding-config4.json > $OUT/sliding-config4.log 2>&1
echo "bench 4 rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-config4.log | tail -10
echo "end $(( $(date +%s) - t0 )) s"
