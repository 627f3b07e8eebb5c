#!/usr/bin/env bash
# Session 59 run B: the residual-D query side reading D only after its pdl_wait (run A's build
# s59a: the diagnostic patch, applied by run A, plus the norm16 glue) against session 58's main
# (s58b): GPU time at bench configs 0, 2, 3, 4 (the residual-D grids) and the fwd+bwd kernel
# timeline at config 0; first a longer stress of s58b (memory reuse between calls).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s58b.so.xz /tmp/base.so
fwa_unpack .devbuild/s59a.so.xz /tmp/new.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 80 python benchmarks/results/session59/stress.py 4000 fill 2>&1 | grep -v -i warn
echo "stress done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 2 3 4
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 2 "" 0 fp16
echo "end $(( $(date +%s) - t0 )) s"
