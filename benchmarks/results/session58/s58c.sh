#!/usr/bin/env bash
# Session 58 run C: run B's build (s58b, carried): the op suite's last 6 tests (cut by run B's
# 330 s timeout), the lifecycle / extremes / random suites, then bench configs 2 and 3 (the long
# windows) with every peer (~450 s in session 51).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s58b.so.xz flash_window_attn/_C.abi3.so
timeout 120 python -m pytest -q -m cuda tests/test_local_attention.py -k "norm16 or fwd_res or residual_d" > $OUT/runC-tests-op.txt 2>&1
tail -2 $OUT/runC-tests-op.txt
echo "op tests done $(( $(date +%s) - t0 )) s"
timeout 120 python -m pytest -q -m cuda tests/test_local_lifecycle.py tests/test_local_extremes.py tests/test_local_random.py > $OUT/runC-tests.txt 2>&1
tail -2 $OUT/runC-tests.txt
echo "suites done $(( $(date +%s) - t0 )) s"
left=$(( 575 - ($(date +%s) - t0) ))
timeout $left python benchmarks/bench_sliding_window.py --configs 2,3 --no-scaling --out $OUT/sliding-configs23.json > $OUT/sliding-configs23.log 2>&1
echo "bench 2,3 rc $? $(( $(date +%s) - t0 )) s"
rm -f $OUT/*.png
grep -h -E "PASS|FAIL|pass|fail|summary" $OUT/sliding-configs23.log
echo "end $(( $(date +%s) - t0 )) s"
