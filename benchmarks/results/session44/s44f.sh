#!/usr/bin/env bash
# Session 44 run F: where the host time of a compiled swapped window16 training step goes, against
# the compiled ceiling (runs A, D: the swapped step issued in 31.8-37.5 ms, the ceiling's in 18.8).
# This build (e15b408).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44f F
rm -f $OUT/s44f.so.xz
timeout 400 python benchmarks/results/session44/host_compile.py swap_compile,ceiling_compile train > $OUT/runF-train.txt 2>&1
echo "train rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runF-train.txt | head -160
