#!/usr/bin/env bash
# Session 52 run E: the warp-specialised key side's stage rows hold lse log2(e) (its producer's
# FMUL once per row instead of one per query column and step in every consumer thread: the
# consumer step 648 -> 619 SASS instructions at d = 64, P bitwise the same): build; bitwise against
# run D's build (.devbuild/s52d.so.xz); the new scale-sign test and the key-side / PDL-chain
# subprocess tests; GPU time base (s52d) / new at configs 0, 4; bench_sliding_window config 4
# (causal) with every peer.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s52e E
fwa_bitwise_vs s52d E tools/local_bitwise.py
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py -k "scale_sign or ws_bwd_kv or pdl_chain" 2>&1 | tail -2
echo "tests done $(( $(date +%s) - t0 )) s"
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 150 python benchmarks/bench_sliding_window.py --configs 4 --no-scaling --out $OUT/sliding-config4.json > $OUT/sliding-config4.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-config4.log | grep -E "ours |sdpa|flex|PASS|FAIL|pass|fail" | head -24
