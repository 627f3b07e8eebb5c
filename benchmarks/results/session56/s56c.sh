#!/usr/bin/env bash
# Session 56 run C: run B's random problems with the residual-D backward everywhere failed 1 of
# 1000 (seed 810: bf16, clustered, a 13-key band; dq 6.7e-3 against a bound of 6.66e-3): D =
# dout . (out + out_lo) weighs dP by the forward's 16-bit P over the fp32 sum l, whose weights do not
# sum to 1. Now the fp16 / bf16 forwards also sum the 16-bit P (row_sum16, local_exp_row) and
# normalise out by that sum (lse still from l, so the exact-D backward's P and D are unchanged).
# Build; bitwise against run A's build with FWA_LOCAL_BWD_RESIDUAL=0 (lse, dq, dv equal; out and dk
# change); the sliding CUDA suites; the random problems with the residual-D backward everywhere;
# GPU time exact / residual in the new build and run A's build / new (configs 0, 4); timeline.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s56c C
export FWA_LOCAL_BWD_RESIDUAL=0
fwa_bitwise_vs s56a C tools/local_bitwise.py
unset FWA_LOCAL_BWD_RESIDUAL
echo "bitwise done $(( $(date +%s) - t0 )) s"
FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_BWD_KV_WS=1 timeout 120 python -m pytest -q -m cuda tests/test_local_random.py > $OUT/runC-random-residual.txt 2>&1
tail -4 $OUT/runC-random-residual.txt
echo "random done $(( $(date +%s) - t0 )) s"
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py --durations=5 > $OUT/runC-tests.txt 2>&1
tail -12 $OUT/runC-tests.txt
echo "suites done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
FWA_LOCAL_BWD_RESIDUAL=0 timeout 100 python benchmarks/results/session45/local_graph_ab.py exact 0 2>&1 | grep -v -i warn
timeout 60 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn | grep -E "median|_ws_|prep|emset"
echo "end $(( $(date +%s) - t0 )) s"
