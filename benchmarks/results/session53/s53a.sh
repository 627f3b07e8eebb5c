#!/usr/bin/env bash
# Session 53 run A: consumer turns (WsTurns, local_ws.cuh) in the three warp-specialised sliding
# kernels (forward, key side, query side): consumer c issues each step's first products only after
# consumer c - 1 issued its own (FlashAttention-3's warp-scheduler barrier, as mbarriers). Build;
# bitwise against main's build (.devbuild/s52e.so.xz; the arithmetic is unchanged, so every output
# and gradient must be bitwise equal); the warp-specialised / every-grid subprocess tests; GPU time
# base / new at configs 0, 4, 2; the per-kernel graph timeline at config 0 bf16.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s53a A
fwa_bitwise_vs s52e A tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py -x \
  -k "scale_sign or other_kernels or wide_block or pdl_chain or deterministic" 2>&1 | tail -2
echo "tests done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "" 0 bf16
echo "end $(( $(date +%s) - t0 )) s"
