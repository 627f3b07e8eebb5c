#!/usr/bin/env bash
# Session 46 run E (H200): the one-warpgroup wgmma forward at d = 128 with 3 k / v stages (copies two
# steps ahead; 113 KB, still 2 CTAs per SM): build; bitwise against run C's build
# (.devbuild/s46c.so.xz, carried); GPU time (graph) C vs E at config 1, 2 rounds; forward tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s46e E
rm -f $OUT/s46e.so.xz
python -c "import lzma; open('/tmp/base.so','wb').write(lzma.open('.devbuild/s46c.so.xz').read())"
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/local_bitwise.py save /tmp/lref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/local_bitwise.py cmp /tmp/lref.pt 2>&1 | grep -v -i warn | tail -3 | tee $OUT/runE-bitwise.txt
for r in 1 2; do for bld in base new; do
  cp /tmp/$bld.so flash_window_attn/_C.abi3.so
  timeout 120 python benchmarks/results/session45/local_graph_ab.py $bld 1 2>&1 | grep -v -i warn
done; done | tee $OUT/runE-graph.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 150 python -m pytest -q -m cuda tests/test_local_attention.py -x -k "forward or fwd or wgmma" > $OUT/runE-tests.txt 2>&1
tail -2 $OUT/runE-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
