#!/usr/bin/env bash
# Session 57 run C: run B's build (carried, .devbuild/s57b.so.xz = main's kernels and glue): the
# benchmark at config 4 (causal, every peer) and configs 2, 3 (the long windows; ours and
# FlexAttention: SDPA with a dense mask there was measured in sessions 39-51, 13.7-25x slower);
# the op's whole CUDA suite (run A's was cut by its time limit, run B ran the rest).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s57b.so.xz flash_window_attn/_C.abi3.so
timeout 100 python benchmarks/bench_sliding_window.py --configs 4 --no-scaling --out $OUT/sliding-config4.json > $OUT/sliding-config4.log 2>&1
echo "bench 4 rc $? $(( $(date +%s) - t0 )) s"
timeout 170 python benchmarks/bench_sliding_window.py --configs 2,3 --impls ours,flex --no-scaling --out $OUT/sliding-configs23.json > $OUT/sliding-configs23.log 2>&1
echo "bench 2,3 rc $? $(( $(date +%s) - t0 )) s"
rm -f $OUT/*.png
grep -h -E "PASS|FAIL|pass|fail|summary" $OUT/sliding-config4.log $OUT/sliding-configs23.log
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py --durations=3 > $OUT/runC-tests.txt 2>&1
tail -5 $OUT/runC-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
