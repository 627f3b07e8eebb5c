#!/usr/bin/env bash
# Session 43 run C: build s43c = s43b + a ping-pong start on the warpgroup query side
# (FWA_WINDOW_BWD_Q_PINGPONG=1: warpgroup 1 starts a window's products once warpgroup 0's first S
# and dP are done, so that one warpgroup's products run during the other's elementwise work;
# default off in this build). Same operations: window_bitwise default vs PINGPONG=1 must be equal;
# the window suite's non-subprocess tests and the folded-tail test with PINGPONG=1; the timeline at
# configs 3 and 1 and the graph step off / on at configs 3, V1 (1024, 4, 144), 1 and 4, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runC-build.txt
grep -E " error|error:|C7511" /tmp/build.txt | head -20 | tee -a $OUT/runC-build.txt
strip --strip-all -o /tmp/new_s.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s43c.so.xz
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
