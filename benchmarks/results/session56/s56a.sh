#!/usr/bin/env bash
# Session 56 run A: the residual-D backward. The forward that autograd records
# (local_attention_fwd_res) also writes out_lo = (fp32 output) - out in bf16; where both backward
# sides are warp-specialised, the preprocess takes D = dout . (out + out_lo) (no max |dout| / |v|, no
# memset), the key side drops its exact-D sums (no per-step group barrier, staging, fixed-point
# flush) and the query side reads D without waiting for the key side. Build; bitwise against main's
# build (.devbuild/s55b.so.xz) with FWA_LOCAL_BWD_RESIDUAL=0 (must be 48 of 48: the forward's out
# and lse and the exact-D backward unchanged) and with the default (out, dv equal; dq, dk differ);
# the new CUDA tests; GPU time exact / residual in the new build and base / new (configs 0, 4, 2);
# the per-kernel timeline at config 0.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s56a A
export FWA_LOCAL_BWD_RESIDUAL=0
fwa_bitwise_vs s55b A tools/local_bitwise.py
mv $OUT/runA-bitwise.txt $OUT/runA-bitwise-exact.txt
unset FWA_LOCAL_BWD_RESIDUAL
timeout 120 python tools/local_bitwise.py cmp /tmp/bitwise_ref.pt 2>&1 | grep -v -i warn | tail -12 | tee $OUT/runA-bitwise-default.txt
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 240 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py \
  -k "fwd_res or residual or opcheck or fake or pdl_chain or out_lo or clustered" > $OUT/runA-tests.txt 2>&1
tail -12 $OUT/runA-tests.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  FWA_LOCAL_BWD_RESIDUAL=0 timeout 100 python benchmarks/results/session45/local_graph_ab.py exact 0 4 2>&1 | grep -v -i warn
  timeout 100 python benchmarks/results/session45/local_graph_ab.py residual 0 4 2>&1 | grep -v -i warn
done
echo "residual A/B done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 2
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_local_timeline_ab 1 "median|_ws_|prep|emset" 0 bf16
echo "end $(( $(date +%s) - t0 )) s"
