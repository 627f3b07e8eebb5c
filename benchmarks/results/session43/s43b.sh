#!/usr/bin/env bash
# Session 43 run B: build s43b = main + the review's twins removed: the query side's elementwise pair
# operations as one helper (bwd_q_ds_pair, sub-blocks and folded tail rows), the mma.sync tail
# warps' lane geometry as TailWarpLanes (warp_mma.cuh; RowTailWarp derives from it: the forward's
# cubins are byte-identical offline), plan_bwd's redundant `!small`. Same operations: window_bitwise
# against s42h must be equal. The folded-tail and PDL tests and the window suite's non-subprocess
# tests; the fwd+bwd timeline at configs 3 and 1; the graph step s42h / s43b, 2 rounds.
# (The build, bitwise and graph steps: benchmarks/results/device_steps.sh, factored out after the run.)
export PYTHONPATH=$PWD
source benchmarks/results/device_steps.sh
t0=$(date +%s)
fwa_build s43b B
fwa_bitwise_vs s42h B
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" -x > $OUT/runB-window.txt 2>&1; echo "rc $?" >> $OUT/runB-window.txt
tail -n 3 $OUT/runB-window.txt
timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py -k "bwd_q_fold_tail or tiled_backward_pdl or narrow_last_block" > $OUT/runB-test-sub.txt 2>&1; echo "rc $?" >> $OUT/runB-test-sub.txt
tail -n 3 $OUT/runB-test-sub.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py s43b $dt 3 1 2>&1 | grep -v -i warn
done | tee $OUT/runB-timeline.txt
fwa_graph_ab B 3 1024,4,144,32,16,12,v1 1
echo "total $(( $(date +%s) - t0 )) s"
