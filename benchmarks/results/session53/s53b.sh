#!/usr/bin/env bash
# Session 53 run B: the d = 64 warp-specialised forward leaves each step's P v in flight
# (kPvInFlight): the next computed step issues its S behind it and waits for both, then releases
# the P v's stage. Two builds: 2 stages (B2, the committed candidate) and 3 stages (B3). Bitwise
# (B2) against main's build (.devbuild/s52e.so.xz); the scale-sign and wide-band (warp-specialised
# stage hold) tests; GPU time base / B2 and base / B3 at configs 0, 4; the per-kernel timeline
# (base / B2) at config 0 bf16.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
sed -i 's/constexpr int kStages = kDefer ? 3 : 2;/constexpr int kStages = kDefer ? 3 : 3;/' csrc/kernels/local/local_fwd_ws_kernel.cuh
fwa_build s53b3 B3
cp /tmp/new.so /tmp/new3.so
sed -i 's/constexpr int kStages = kDefer ? 3 : 3;/constexpr int kStages = kDefer ? 3 : 2;/' csrc/kernels/local/local_fwd_ws_kernel.cuh
fwa_build s53b B
cp /tmp/new.so /tmp/new2.so
fwa_bitwise_vs s52e B tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 150 python -m pytest -q -m cuda tests/test_local_attention.py -x \
  -k "scale_sign or wide_block" 2>&1 | tail -2
echo "tests done $(( $(date +%s) - t0 )) s"
echo "=== base / B2"
fwa_local_graph_ab 0 4
cp /tmp/new3.so /tmp/new.so
echo "=== base / B3"
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
cp /tmp/new2.so /tmp/new.so
for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  echo "== timeline $b"
  timeout 100 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn | head -3
done
echo "end $(( $(date +%s) - t0 )) s"
