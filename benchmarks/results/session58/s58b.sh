#!/usr/bin/env bash
# Session 58 run B: run A's kernels (norm16) plus the autograd fix (out_lo saved or not is told by
# the number of saved tensors; run A: the backward's numel() on a symbolic out_lo failed the
# dynamic compile). Build; the dynamic-compile test; bench configs 0 and 1 (all peers); the
# op's whole CUDA suite.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s58b B
timeout 60 python -m pytest -q -m cuda tests/test_local_attention.py -k "compile_dynamic" 2>&1 | tail -2
echo "dynamic done $(( $(date +%s) - t0 )) s"
timeout 150 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench 0,1 rc $? $(( $(date +%s) - t0 )) s"
rm -f $OUT/*.png
grep -v -i warn $OUT/sliding-configs01.log | grep -E "PASS|FAIL|pass|fail|summary" | tail -40
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py --durations=3 > $OUT/runB-tests.txt 2>&1
tail -5 $OUT/runB-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
