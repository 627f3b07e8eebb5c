#!/usr/bin/env bash
# Session 44 run H: trace the aten::fill_ calls of a compiled training step (swapped, then the
# ceiling for comparison), e15b408.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44h H
rm -f $OUT/s44h.so.xz
timeout 250 python benchmarks/results/session44/fill_trace.py swap_compile > $OUT/runH-fill-swap.txt 2>&1
timeout 200 python benchmarks/results/session44/fill_trace.py ceiling_compile > $OUT/runH-fill-ceiling.txt 2>&1
echo "end $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runH-fill-swap.txt | tail -60
grep -v -i warn $OUT/runH-fill-ceiling.txt | tail -20
