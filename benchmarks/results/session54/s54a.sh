#!/usr/bin/env bash
# Session 54 run A: (1) 4 stages of k / v in the d = 64 warp-specialised forward (3 before) and 4
# stages of q / dout in the warp-specialised key side (3 before; d = 64 and 128): build, bitwise
# against main's build (.devbuild/s53f.so.xz), GPU time base / new at configs 0, 4, 2, the
# per-kernel timeline at config 0 bf16; (2) the sliding random-problem suite on that build
# (session 53's suite call stopped at ~95 %); (3) per-instruction stall sampling of main's key side
# (ncu SourceCounters, -k regex:local_attn_bwd_kv_ws, config 0 bf16): where its step's time goes.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s54a A
fwa_bitwise_vs s53f A tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
echo "timeline done $(( $(date +%s) - t0 )) s"
timeout 170 python -m pytest -q -m cuda tests/test_local_random.py -x 2>&1 | tail -3
echo "random suite done $(( $(date +%s) - t0 )) s"
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 ncu -k regex:local_attn_bwd_kv_ws -c 1 --section SourceCounters --section WarpStateStats \
  -o /tmp/s54a_kv python benchmarks/results/session46/ncu_local.py 0 bf16 > /tmp/ncu_kv.log 2>&1
echo "ncu kv rc $? $(( $(date +%s) - t0 )) s"; tail -3 /tmp/ncu_kv.log
ncu --import /tmp/s54a_kv.ncu-rep --page source --csv --print-source sass > /tmp/src_kv.csv 2> /tmp/src_kv.err
echo "source page rc $? lines $(wc -l < /tmp/src_kv.csv)"; head -c 300 /tmp/src_kv.err
xz -T8 -6 -c /tmp/src_kv.csv > $OUT/runA-source-kv_ws.csv.xz
ncu --import /tmp/s54a_kv.ncu-rep > $OUT/runA-details-kv_ws.txt 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
echo "end $(( $(date +%s) - t0 )) s"
