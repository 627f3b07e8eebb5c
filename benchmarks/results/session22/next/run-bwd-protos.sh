#!/usr/bin/env bash
# Next session: the two N = 256, d = 32 wgmma backward prototypes (tools/proto/wgmma_bwd_{kv,q}_n256_d32.cu)
# against the product's tiled backward kernels (needs the product's .so in place for kernel_breakdown).
P="nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto -Xptxas -v"
$P tools/proto/wgmma_bwd_kv_n256_d32.cu -o /tmp/bkv 2>&1 | grep -E "registers|spill|C75"
$P -DPROTO_KV2 tools/proto/wgmma_bwd_kv_n256_d32.cu -o /tmp/bkv2 2>&1 | grep -E "registers|spill|C75"
$P tools/proto/wgmma_bwd_q_n256_d32.cu -o /tmp/bq 2>&1 | grep -E "registers|spill|C75"
for b in bkv bkv2 bq; do echo "== $b"; timeout 60 /tmp/$b 64 | tail -4; timeout 60 /tmp/$b 6144 | tail -4; done 2>&1 | tee $OUT/bwd-protos.txt
# if bq hangs or errs: compute-sanitizer --tool racecheck /tmp/bq 8 ; --tool memcheck /tmp/bq 8
timeout 60 python tools/kernel_breakdown.py --configs 2 2>&1 | tail -9 | tee -a $OUT/bwd-protos.txt
