#!/usr/bin/env bash
# Session 48 run A (H200): the warpgroup query side sums D's partials itself (no dsum kernel:
# BwdParams::q_side_sums_d). Build; bitwise against main's s47c build (tools/window_bitwise.py); the
# tiled backward's CUDA tests (the new FWA_WINDOW_BWD_Q_SUMS_D bitwise test among them); the
# fwd+bwd step in a CUDA graph, s47c against the new build, at window16's stage shapes and
# base_window12_192's first stage.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s48a A
fwa_bitwise_vs s47c A
echo "bitwise $(( $(date +%s) - t0 )) s"
timeout 330 python -m pytest -q -p no:cacheprovider -m cuda tests/test_window_attention.py \
  -k "sums_d or tiled_backward or q_fold or key_ranges or kv_tail or narrow_last_block or dbias_slice" 2>&1 | tail -6 | tee $OUT/runA-tests.txt
echo "tests $(( $(date +%s) - t0 )) s"
fwa_graph_ab A 1024,3,256,32,16,16,v2 256,6,256,32,4,16,v2 1024,4,144,32,16,12,v2
echo "done $(( $(date +%s) - t0 )) s"
