#!/usr/bin/env bash
# Session 46 run B (H200): the sliding backward's preprocess with every load of its 64-row block
# issued before the first use (one load round trip per CTA instead of 8 at d = 128): build; graph
# timelines (ours) of configs 1 and 0; GPU time (graph) at configs 0, 1; the local CUDA tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s46b B
S=benchmarks/results/session46
timeout 60 python $S/graph_timeline.py 1 bf16 ours 2>&1 | grep -v -i warn | tee $OUT/runB-timeline.txt
timeout 60 python $S/graph_timeline.py 1 fp16 ours 2>&1 | grep -v -i warn | tee -a $OUT/runB-timeline.txt
timeout 60 python $S/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn | tee -a $OUT/runB-timeline.txt
for r in 1 2; do timeout 120 python benchmarks/results/session45/local_graph_ab.py prep64 1 0 2>&1 | grep -v -i warn; done | tee $OUT/runB-graph.txt
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 250 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py -x > $OUT/runB-tests.txt 2>&1
tail -2 $OUT/runB-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
