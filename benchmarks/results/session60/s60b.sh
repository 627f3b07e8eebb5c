#!/usr/bin/env bash
# Session 60 run B (H200): the non-warp-specialised wgmma backward (small grids: win(256,256)) with
# full q / dout / k / v tiles copied by load_full_tile_sw128_async (local_load_tile), against run A's
# build B (s60b = main 0af8993, carried): bitwise, GPU time and kernel timeline at bench config 1;
# the grid / determinism tests and the random suite; bench configs 0, 1.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s60c B
fwa_bitwise_vs s60b B tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 1
fwa_local_timeline_ab 1 "" 1 bf16
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 230 python -m pytest -q -x tests/test_local_attention.py -k "grid_cuda or scale_sign or deterministic" 2>&1 | tail -2
timeout 60 python -m pytest -q -m cuda tests/test_local_random.py 2>&1 | tail -1
echo "tests done $(( $(date +%s) - t0 )) s"
timeout 150 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
rm -f $OUT/*.png $OUT/s60c.so.xz.tmp
grep -h -E "PASS|FAIL|pass|fail|summary" $OUT/sliding-configs01.log | head -40
echo "end $(( $(date +%s) - t0 )) s"
