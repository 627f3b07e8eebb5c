#!/usr/bin/env bash
# Session 53 run E: the consumer ring (WsTurns) around each step's exponentials instead of its
# first products: in the warp-specialised forward a consumer starts its softmax (local_softmax_step)
# only once the consumer before it finished its own; in the key side the same around
# local_kv_step_grads. Run D's sampling: the forward's consumers spend ~48 % of a step in the
# softmax, tensor and MUFU pipes both ~42 % busy: the three softmaxes overlap (each gets a third of
# the MUFU) and then the three consumers' products do. Build; bitwise against main's build
# (.devbuild/s52e.so.xz); the scale-sign and wide-band tests; GPU time base / new at configs 0, 4,
# 2; the per-kernel timeline at config 0 bf16.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s53e E
fwa_bitwise_vs s52e E tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 100 python -m pytest -q -m cuda tests/test_local_attention.py -x -k "scale_sign or wide_block" 2>&1 | tail -1
echo "tests done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
echo "end $(( $(date +%s) - t0 )) s"
