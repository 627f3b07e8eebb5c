#!/usr/bin/env bash
# Session 29 run A: the fused cluster backward prototype (tools/proto/cluster_bwd_n256_d32.cu) against
# float64 (W = 64: every output, the dbias over all windows) and timed at W = 6144, next to the
# key-side and query-side prototypes and the product's kernels at (1024, 6, 256) in the same call.
set -x
NV="nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto"
$NV -Xptxas -v tools/proto/cluster_bwd_n256_d32.cu -o /tmp/bf 2>&1 | grep -E "registers|spill|C75"
$NV tools/proto/wgmma_bwd_kv_n256_d32.cu -o /tmp/bkv
$NV tools/proto/wgmma_bwd_q_n256_d32.cu -o /tmp/bq
timeout 60 /tmp/bf 64
timeout 60 /tmp/bf 6144
timeout 60 /tmp/bkv 6144
timeout 60 /tmp/bq 6144
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28k_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 120 python tools/kernel_breakdown.py --configs 2 --iters 20 2>&1 | grep -v Warn
