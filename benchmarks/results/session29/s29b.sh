#!/usr/bin/env bash
# Session 29 run B: where the fused cluster prototype's time goes: the same kernel with parts removed
# (timing only; the results of the variants are wrong by construction).
NV="nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto"
for f in "" -DPROTO_NO_SYNC -DPROTO_NO_DQ -DPROTO_NO_REMOTE -DPROTO_NO_DBIAS "-DPROTO_NO_SYNC -DPROTO_NO_DQ" "-DPROTO_NO_SYNC -DPROTO_NO_DQ -DPROTO_NO_DBIAS"; do
  echo "== variant [$f]"
  $NV $f tools/proto/cluster_bwd_n256_d32.cu -o /tmp/bfx 2>/dev/null
  timeout 60 /tmp/bfx 6144 | grep -E "median"
done
