#!/usr/bin/env bash
# Session 51 run A (H200): the sliding forward's d = 64 warp-specialised kernel with each step's
# P v deferred to the next step, P staged in shared memory (local_fwd_ws_p_smem): build; bitwise
# against main's build (.devbuild/s50g.so.xz, carried); GPU time (graph) base / new at sliding
# configs 0 (block256x16) and 4 (causal), 2 rounds; the warp-specialised forward tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s51a A
rm -f $OUT/s51a.so.xz
fwa_bitwise_vs s50g A tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 240 python -m pytest -q -m cuda tests/test_local_attention.py -x \
  -k "ws_fwd_every_grid or wide_block_bands_warp or pdl_chain" 2>&1 | tail -3
echo "end $(( $(date +%s) - t0 )) s"
