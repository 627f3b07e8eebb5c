#!/usr/bin/env bash
# Session 45 run D (H200): the local backward's preprocess -> key side -> query side chained as
# programmatic dependents (FWA_WINDOW_PDL): build; bitwise FWA_WINDOW_PDL=0 against the default
# (tools/local_bitwise.py; expected equal); GPU time (graph) at sliding configs 1 and 0, the two
# settings alternating, 2 rounds; the local CUDA tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s45d D
rm -f $OUT/s45d.so.xz
FWA_WINDOW_PDL=0 timeout 120 python tools/local_bitwise.py save /tmp/lref.pt > /dev/null 2>&1
timeout 120 python tools/local_bitwise.py cmp /tmp/lref.pt 2>&1 | grep -v -i warn | tail -3 | tee $OUT/runD-bitwise.txt
echo "bitwise done $(( $(date +%s) - t0 )) s"
for r in 1 2; do for e in 0 1; do
  FWA_WINDOW_PDL=$e timeout 120 python benchmarks/results/session45/local_graph_ab.py pdl$e 1 0 2>&1 | grep -v -i warn
done; done | tee $OUT/runD-graph.txt
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py -x -k "not subprocess" > $OUT/runD-tests.txt 2>&1
tail -3 $OUT/runD-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
