#!/usr/bin/env bash
# Session 55 run C (main's kernels = run B's build, .devbuild/s55b.so.xz): the sliding-window
# benchmark at configs 0, 1 (block256x16, win(256,256)) and 4 (causal) with every peer, and the
# per-kernel timeline of block256x16 bf16.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s55b.so.xz flash_window_attn/_C.abi3.so
timeout 170 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench 0,1 rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs01.log | tail -16
timeout 110 python benchmarks/bench_sliding_window.py --configs 4 --no-scaling --out $OUT/sliding-config4.json > $OUT/sliding-config4.log 2>&1
echo "bench 4 rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-config4.log | tail -10
timeout 60 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn | grep -E "median|_ws_|prep|memset"
echo "end $(( $(date +%s) - t0 )) s"
