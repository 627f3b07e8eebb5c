#!/usr/bin/env bash
# Session 58 run A: LocalFwdParams::norm16 (the 64-key-step wgmma forward takes the 16-bit row sums
# only where the residual-D backward's grid rule holds; elsewhere out is normalised by the fp32
# sums). Build; GPU time against session 57's main (s57b) at config 1 (win(256,256)) and 0; bitwise
# against s57b (differences expected only in the d = 128 / 72 16-bit outputs on small grids, and
# their gradients); the tests of out_lo, fwd_res, the residual backward, norm16 and the dynamic
# compile (never run on a GPU); the random problems (default and residual everywhere).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s58a A
fwa_unpack .devbuild/s57b.so.xz /tmp/base.so
fwa_local_graph_ab 1 0
echo "graph done $(( $(date +%s) - t0 )) s"
fwa_bitwise_vs s57b A tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py -k "compile_dynamic or out_lo or norm16 or fwd_res or residual" --durations=5 > $OUT/runA-tests.txt 2>&1
tail -12 $OUT/runA-tests.txt
echo "tests done $(( $(date +%s) - t0 )) s"
timeout 100 python -m pytest -q -m cuda tests/test_local_random.py > $OUT/runA-random.txt 2>&1
tail -2 $OUT/runA-random.txt
FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_BWD_KV_WS=1 timeout 100 python -m pytest -q -m cuda tests/test_local_random.py > $OUT/runA-random-residual.txt 2>&1
tail -2 $OUT/runA-random-residual.txt
echo "end $(( $(date +%s) - t0 )) s"
