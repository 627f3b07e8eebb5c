#!/usr/bin/env bash
# Session 43 run C: build s43c = s43b + a ping-pong start on the warpgroup query side
# (FWA_WINDOW_BWD_Q_PINGPONG=1: warpgroup 1 starts a window's products once warpgroup 0's first S
# and dP are done, so that one warpgroup's products run during the other's elementwise work;
# default off in this build). Same operations: window_bitwise default vs PINGPONG=1 must be equal;
# the window suite's non-subprocess tests and the folded-tail test with PINGPONG=1; the timeline at
# configs 3 and 1 and the graph step off / on at configs 3, V1 (1024, 4, 144), 1 and 4, 2 rounds.
# (The build, bitwise and graph steps: benchmarks/results/device_steps.sh, factored out after the run.)
export PYTHONPATH=$PWD
source benchmarks/results/device_steps.sh
t0=$(date +%s)
fwa_build s43c C
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
FWA_WINDOW_BWD_Q_PINGPONG=1 timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runC-bitwise.txt
FWA_WINDOW_BWD_Q_PINGPONG=1 timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" -x > $OUT/runC-window.txt 2>&1; echo "rc $?" >> $OUT/runC-window.txt
tail -n 3 $OUT/runC-window.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for dt in fp16 bf16; do
  timeout 100 python benchmarks/results/session42/timeline_bwd.py s43c-off $dt 3 1 2>&1 | grep -v -i warn
  FWA_WINDOW_BWD_Q_PINGPONG=1 timeout 100 python benchmarks/results/session42/timeline_bwd.py s43c-on $dt 3 1 2>&1 | grep -v -i warn
done | tee $OUT/runC-timeline.txt
for r in 1 2; do
  timeout 100 python benchmarks/results/session36/graph_ab.py off 3 1024,4,144,32,16,12,v1 1 4 2>&1 | grep -v -i warn
  FWA_WINDOW_BWD_Q_PINGPONG=1 timeout 100 python benchmarks/results/session36/graph_ab.py on 3 1024,4,144,32,16,12,v1 1 4 2>&1 | grep -v -i warn
done | tee $OUT/runC-graph.txt
FWA_WINDOW_BWD_Q_PINGPONG=1 timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "bwd_q_fold_tail and default" > $OUT/runC-test-fold.txt 2>&1; echo "rc $?" >> $OUT/runC-test-fold.txt
tail -n 2 $OUT/runC-test-fold.txt
echo "total $(( $(date +%s) - t0 )) s"
