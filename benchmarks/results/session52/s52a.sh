#!/usr/bin/env bash
# Session 52 run A (diagnostic, not kept): how far would the residual-D backward get at
# block256x16? A build with FWA_DIAG_NO_D_SUMS (the warp-specialised key side without its exact-D
# sums, staging, group barrier and fixed-point flush; the warp-specialised query side reading the
# preprocess's D~ without waiting for the key side: dq wrong, timing only) and FWA_DIAG_L16 (the
# online softmax rounds each exp to bf16 before summing it: the forward cost of normalising by
# the sum of the 16-bit P). Base: main's build (.devbuild/s51d.so.xz). GPU time base / diag at
# configs 0, 4 (2 rounds) and the per-kernel graph timeline at config 0 bf16.
# The two macros are in tools/patches/local-bwd-no-exact-d-sums-fwd-l16-DIAGNOSTIC-TIMING-ONLY.patch
# (the run's working tree; it applies to f78950f, main before this session's kernel changes).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
sed -i '1i #define FWA_DIAG_NO_D_SUMS' csrc/kernels/local/local_bwd_kv_ws_kernel.cuh csrc/kernels/local/local_bwd_q_ws_kernel.cuh
sed -i '1i #define FWA_DIAG_L16' csrc/kernels/kernel_utils.cuh
fwa_build s52a A
fwa_unpack .devbuild/s51d.so.xz /tmp/base.so
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  echo "== timeline $b"
  timeout 120 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn
done
echo "end $(( $(date +%s) - t0 )) s"
