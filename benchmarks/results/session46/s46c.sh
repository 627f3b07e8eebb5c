#!/usr/bin/env bash
# Session 46 run C (H200): the key side copies its first item's q, dout and lse before its pdl_wait
# (D after), the query side (wgmma path) copies its first two key tiles and issues the first
# tile's S and dP before its wait: build; bitwise against run B's build (.devbuild/s46b.so.xz,
# carried); GPU time (graph) run B vs C at configs 1, 0, 2 rounds; timeline; the local CUDA tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s46c C
python -c "import lzma,sys; open('/tmp/base.so','wb').write(lzma.open('.devbuild/s46b.so.xz').read())"
chmod +x /tmp/base.so
S=benchmarks/results/session46
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/local_bitwise.py save /tmp/lref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/local_bitwise.py cmp /tmp/lref.pt 2>&1 | grep -v -i warn | tail -3 | tee $OUT/runC-bitwise.txt
for r in 1 2; do for bld in base new; do
  cp /tmp/$bld.so flash_window_attn/_C.abi3.so
  timeout 120 python benchmarks/results/session45/local_graph_ab.py $bld 1 0 2>&1 | grep -v -i warn
done; done | tee $OUT/runC-graph.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 60 python $S/graph_timeline.py 1 bf16 ours 2>&1 | grep -v -i warn | tee $OUT/runC-timeline.txt
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 250 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py -x > $OUT/runC-tests.txt 2>&1
tail -2 $OUT/runC-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
