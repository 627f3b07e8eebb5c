#!/usr/bin/env bash
# Session 60 run A (H200): the one-warpgroup wgmma forward's k / v copies (win(256,256)-like small
# grids). Build A = the working tree: tiles whose 64 rows are all < L (d = head-dim bucket) copied
# by load_full_tile_sw128_async (per-thread offsets kept across steps, no predicates). Build B = A +
# copies_in_s.patch: those copies issued between S's wgmma issue and its wait (kWG = 1, 64-key steps).
# Base = s59c (main's kernels, carried). Bitwise (tools/local_bitwise.py) of A and B against base;
# GPU time at bench config 1, 2 rounds; test subsets on B.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
S=benchmarks/results/session60
fwa_build s60a A
cp /tmp/new.so /tmp/A.so
git apply $S/copies_in_s.patch && fwa_build s60b B && cp /tmp/new.so /tmp/B.so
git apply -R $S/copies_in_s.patch
fwa_unpack .devbuild/s59c.so.xz /tmp/base.so
echo "builds done $(( $(date +%s) - t0 )) s"
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/local_bitwise.py save /tmp/ref.pt 2>&1 | grep -v -i warn | tail -2
for b in A B; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    echo "== bitwise $b vs base"
    timeout 120 python tools/local_bitwise.py cmp /tmp/ref.pt 2>&1 | grep -v -i warn | tail -4
done
echo "bitwise done $(( $(date +%s) - t0 )) s"
G=benchmarks/results/session45/local_graph_ab.py
for r in 1 2; do for b in base A B; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    timeout 90 python $G $b 1 2>&1 | grep -v -i warn
done; done
echo "graph done $(( $(date +%s) - t0 )) s"
cp /tmp/B.so flash_window_attn/_C.abi3.so
timeout 300 python -m pytest -q -x tests/test_local_attention.py -k "grid_cuda or scale_sign or deterministic" 2>&1 | tail -5
echo "end $(( $(date +%s) - t0 )) s"
