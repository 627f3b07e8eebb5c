#!/usr/bin/env bash
# Next session: the warp-specialised N = 256 forward prototype (tools/proto/ws_fwd_n256_d32.cu,
# written in session 21 without a device) against the first prototype, same call.
set -x
P="nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc -Itools/proto -Xptxas -v"
$P tools/proto/wgmma_fwd_n256_d32.cu -DPROTO_GROUPS=3 -o /tmp/proto3 2>&1 | grep -E "registers|spill|C75"
$P tools/proto/ws_fwd_n256_d32.cu -o /tmp/ws4 2>&1 | grep -E "registers|spill|C75"
$P tools/proto/ws_fwd_n256_d32.cu -DPROTO_STAGES=3 -o /tmp/ws3 2>&1 | grep -E "registers|spill|C75"
$P tools/proto/ws_fwd_n256_d32.cu -DPROTO_NO_PINGPONG -o /tmp/wsn 2>&1 | grep -E "registers|spill|C75"
for b in proto3 ws4 ws3 wsn; do echo "== $b"; timeout 60 /tmp/$b 6144; timeout 30 /tmp/$b 2048 | tail -1; done 2>&1 | tee $OUT/ws-proto.txt
# if ws4 hangs or errs: compute-sanitizer --tool racecheck /tmp/ws4 64 ; --tool synccheck
