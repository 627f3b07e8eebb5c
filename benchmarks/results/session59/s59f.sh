#!/usr/bin/env bash
# Session 59 run F: run C's build (s59c, carried): win(256,256) (bench config 1) forward and
# fwd+bwd GPU time under the forward's kernel switches (read once per process): default (the
# one-warpgroup wgmma forward, 64-key steps), FWA_LOCAL_FWD_WS=1 (the warp-specialised forward on
# this 128-item grid), FWA_LOCAL_WG=2 / 3, FWA_LOCAL_FWD_KEYS=128; 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runF.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s59c.so.xz flash_window_attn/_C.abi3.so
G=benchmarks/results/session45/local_graph_ab.py
for r in 1 2; do
    timeout 60 python $G default 1 2>&1 | grep -v -i warn
    FWA_LOCAL_FWD_WS=1 timeout 60 python $G fwd_ws=1 1 2>&1 | grep -v -i warn
    FWA_LOCAL_WG=2 timeout 60 python $G wg=2 1 2>&1 | grep -v -i warn
    FWA_LOCAL_WG=3 timeout 60 python $G wg=3 1 2>&1 | grep -v -i warn
    FWA_LOCAL_FWD_KEYS=128 timeout 60 python $G keys=128 1 2>&1 | grep -v -i warn
done
echo "end $(( $(date +%s) - t0 )) s"
