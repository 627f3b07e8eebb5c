#!/usr/bin/env bash
# Session 55 run A: the warp-specialised forward's and query side's items shifted by the number of
# query tiles (0-2) that saves the most idle consumer steps (local_ws_item_shift: block256x16 788 ->
# 748 steps per slice at the query side, causal L2048 197 -> 187), and the query side's consumer
# counting its stages (WsStageCursor) instead of dividing by 3 at d = 128. Build; bitwise against
# main's build (.devbuild/s54e.so.xz) with the old items (FWA_LOCAL_WS_SHIFT=0: must be 48 of 48)
# and with the default ones; the new CUDA tests; GPU time with shift 0 / default in the new build
# at configs 0 and 4 (2 rounds); base / new at config 2 (the d = 128 query side's cursor); the
# per-kernel timelines at configs 0 and 4.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s55a A
export FWA_LOCAL_WS_SHIFT=0
fwa_bitwise_vs s54e A tools/local_bitwise.py
mv $OUT/runA-bitwise.txt $OUT/runA-bitwise-shift0.txt
unset FWA_LOCAL_WS_SHIFT
timeout 120 python tools/local_bitwise.py cmp /tmp/bitwise_ref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runA-bitwise-default.txt
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py -k "shift or wide_block or pdl_chain" > $OUT/runA-tests.txt 2>&1
tail -2 $OUT/runA-tests.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  FWA_LOCAL_WS_SHIFT=0 timeout 100 python benchmarks/results/session45/local_graph_ab.py shift0 0 4 2>&1 | grep -v -i warn
  timeout 100 python benchmarks/results/session45/local_graph_ab.py default 0 4 2>&1 | grep -v -i warn
done
echo "shift A/B done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
fwa_local_timeline_ab 1 "median|_ws_" 4 bf16
echo "end $(( $(date +%s) - t0 )) s"
