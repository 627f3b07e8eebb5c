#!/usr/bin/env bash
# Session 59 run D: run C's build (s59c, carried): the lifecycle / extremes / random suites, the
# memory-reuse repeatability test three more times, then bench_sliding_window configs 0 and 1.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s59c.so.xz flash_window_attn/_C.abi3.so
timeout 120 python -m pytest -q -m cuda tests/test_local_lifecycle.py tests/test_local_extremes.py tests/test_local_random.py > $OUT/runD-tests.txt 2>&1
tail -1 $OUT/runD-tests.txt
for r in 1 2 3; do timeout 40 python -m pytest -q -m cuda tests/test_local_attention.py -k "memory_reuse or residual_d_backward" 2>&1 | tail -1; done
echo "suites done $(( $(date +%s) - t0 )) s"
timeout 200 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
rm -f $OUT/*.png
grep -h -E "PASS|FAIL|pass|fail|summary" $OUT/sliding-configs01.log
echo "end $(( $(date +%s) - t0 )) s"
