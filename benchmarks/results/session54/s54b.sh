#!/usr/bin/env bash
# Session 54 run B: the warp-specialised key side at d = 64 with 2 consumer warpgroups (232
# registers; 3 at 160 before) and each step's dv / dk products deferred to the consumer's next
# computed step, issued with its S / dP so that they run during its elementwise work (kDeferPb, the
# query side's kDeferDq and the forward's deferred P v; run A's ncu: the step's closing wait for
# dv / dk was 8.7 % of the key side's samples). Build (FWA_EXP_KV_CONS64=2, FWA_EXP_KV_DEFER64=1);
# bitwise against run A's build (.devbuild/s54a.so.xz); the key-side, wide-band, scale-sign and
# PDL-chain tests; GPU time base / new at configs 0, 4, 2 and the per-kernel timeline. Then the
# same with 2 consumers and no deferral (FWA_EXP_KV_DEFER64=0 in the d = 64 backward instantiation
# files): config 0 and the timeline.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s54b B
fwa_bitwise_vs s54a B tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
cp /tmp/new.so /tmp/new_defer.so
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py -x -k "ws_bwd_kv_every_grid or wide_block or scale_sign or pdl" 2>&1 | tail -2
echo "tests done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
for f in csrc/kernels/local/instantiations/local_bwd_bf16_hd64.cu csrc/kernels/local/instantiations/local_bwd_fp16_hd64.cu; do
  sed -i '1i #define FWA_EXP_KV_DEFER64 0' $f
done
fwa_build s54b0 B0
fwa_bitwise_vs s54a B0 tools/local_bitwise.py
echo "== 2 consumers, no deferral"
fwa_local_graph_ab 0
fwa_local_timeline_ab 1 "median|_ws_" 0 bf16
cp /tmp/new_defer.so flash_window_attn/_C.abi3.so
echo "end $(( $(date +%s) - t0 )) s"
