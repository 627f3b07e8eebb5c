#!/usr/bin/env bash
# Session 61 run A (H200): build s61a (poly_exp2: a share of the warp-specialised sliding forward's
# exponents on the FMA pipe, FWA_LOCAL_FWD_EXP_EMU=4|8, default 0 = main's kernels); bitwise
# against main (s60c) with the default; GPU time (session45/local_graph_ab.py) of main and of the
# new build at 0 / 4 / 8 (and the query side's FWA_LOCAL_BWD_Q_EXP_EMU=4|8) on configs 0 (block256x16) and 4 (causal), then config 2 (win(1024,0), d 128).
# (The switches ran in a build of main plus tools/patches/local-fwd-q-ws-poly-exp2-share-SLOWER.patch; not in main.)
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s61a A
fwa_bitwise_vs s60c A tools/local_bitwise.py
G=benchmarks/results/session45/local_graph_ab.py
for r in 1 2; do
    cp /tmp/base.so flash_window_attn/_C.abi3.so
    timeout 60 python $G main 0 4 2>&1 | grep -v -i warn
    cp /tmp/new.so flash_window_attn/_C.abi3.so
    for e in 0 4 8; do FWA_LOCAL_FWD_EXP_EMU=$e timeout 60 python $G emu$e 0 4 2>&1 | grep -v -i warn; done
    for e in 4 8; do FWA_LOCAL_BWD_Q_EXP_EMU=$e timeout 60 python $G qemu$e 0 4 2>&1 | grep -v -i warn; done
    echo "t $(( $(date +%s) - t0 )) s"
done
for e in 0 4; do FWA_LOCAL_FWD_EXP_EMU=$e timeout 60 python $G emu$e 2 2>&1 | grep -v -i warn; done
echo "end $(( $(date +%s) - t0 )) s"
