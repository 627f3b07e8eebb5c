#!/usr/bin/env bash
# Session 29 run O: the three N = 256 backward prototypes after the review (shared
# proto_bwd_block.cuh step and proto::check_bwd): float64 checks at W = 64, times at W = 6144.
NV="nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto"
for f in cluster_bwd_n256_d32 wgmma_bwd_kv_n256_d32 wgmma_bwd_q_n256_d32; do
  $NV tools/proto/$f.cu -o /tmp/$f 2>/dev/null || echo "BUILD FAILED $f"
  echo "== $f"; timeout 60 /tmp/$f 64; timeout 60 /tmp/$f 6144 | grep -E "median|NaN"
done
