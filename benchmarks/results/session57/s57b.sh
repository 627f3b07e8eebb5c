#!/usr/bin/env bash
# Session 57 run B: run A's forward (row sums by P [v | 1]) plus the autograd forward computing
# out_lo only where the backward can use it (local_out_lo_wanted: both warp-specialised backward
# sides on this grid), so that win(256,256)'s forward (not warp-specialised backward) writes none.
# Build; the benchmark at configs 0, 1 with every peer; the timeline at config 0; the op suite's
# tests run A's time limit cut (the residual-D section, opcheck, compile) and the new rule tests;
# the lifecycle, extremes and random suites; the random problems with the residual form everywhere.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s57b B
timeout 150 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench 0,1 rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs01.log | grep -E "^\|| ms|PASS|FAIL|pass|fail|summary" | tail -60
timeout 40 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn | grep -E "median|_ws_|prep|emset"
timeout 40 python benchmarks/results/session46/graph_timeline.py 1 bf16 ours 2>&1 | grep -v -i warn | grep -E "median|local|emset"
timeout 150 python -m pytest -q -m cuda tests/test_local_attention.py -k "out_lo or fwd_res or residual or opcheck or compile or fake or inference or autograd" > $OUT/runB-tests-op.txt 2>&1
tail -3 $OUT/runB-tests-op.txt
echo "op tests done $(( $(date +%s) - t0 )) s"
FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_BWD_KV_WS=1 timeout 60 python -m pytest -q -m cuda tests/test_local_random.py > $OUT/runB-random-residual.txt 2>&1
tail -2 $OUT/runB-random-residual.txt
timeout 200 python -m pytest -q -m cuda tests/test_local_lifecycle.py tests/test_local_extremes.py tests/test_local_random.py --durations=3 > $OUT/runB-tests.txt 2>&1
tail -6 $OUT/runB-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
