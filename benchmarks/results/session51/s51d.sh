#!/usr/bin/env bash
# Session 51 run D (H200): the sliding backward's warp-specialised key and query sides in the PDL
# chain (launched as programmatic dependents; the key side's row warp waits before reading the
# preprocess's D~ and max |dout|, |v| and then lets the query side launch, the query side's row
# warps wait before reading d_acc): build; bitwise against main's build (.devbuild/s50g.so.xz);
# GPU time (graph) base / new at sliding configs 0, 4 and 2, 2 rounds; the PDL-chain test (new
# warp-specialised cases) and the wide-block warp-specialised test.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s51d D
fwa_bitwise_vs s50g D tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4 2
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 280 python -m pytest -q -m cuda tests/test_local_attention.py -x \
  -k "pdl_chain or wide_block_bands_warp" 2>&1 | tail -3
echo "end $(( $(date +%s) - t0 )) s"
