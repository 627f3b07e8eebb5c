#!/usr/bin/env bash
# Session 61 run B (H200): build s61b (session 60's review item: the full-tile test of the
# small-grid kernels' streamed copies in one helper, load_streamed_tile_sw128_async, used by the
# wgmma forward's issue_kv and the backward's local_load_tile; ptxas allocates differently:
# d = 128 one-warpgroup forward 174 -> 168 registers). Bitwise against main (s60c); GPU time at
# config 1 (win(256,256), the kernels it changes), 2 rounds; the sliding CUDA tests' first part.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s61b B
fwa_bitwise_vs s60c B tools/local_bitwise.py
fwa_local_graph_ab 1
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 300 python -m pytest -q -x tests/test_local_attention.py -k "grid_cuda or scale_sign or deterministic" 2>&1 | tail -3
echo "end $(( $(date +%s) - t0 )) s"
