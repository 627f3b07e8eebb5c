#!/usr/bin/env bash
# Session 51 run G (H200): the sliding backward's warp-specialised key side at d = 64 with each
# step's dv += P^T dout and dk += dS^T q deferred to the next computed step (P^T, dS^T staged in
# shared memory by stmatrix; SS wgmma): build; bitwise against run D's build (.devbuild/s51d.so.xz);
# GPU time (graph) base / new at sliding configs 0 and 4, 2 rounds; the PDL-chain, wide-block and
# every-grid warp-specialised key-side tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runG.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s51g G
fwa_bitwise_vs s51d G tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 150 python -m pytest -q -m cuda tests/test_local_attention.py -x \
  -k "pdl_chain or wide_block_bands_warp or ws_bwd_kv_every" 2>&1 | tail -3
echo "end $(( $(date +%s) - t0 )) s"
