#!/usr/bin/env bash
# Session 42 run C: build s42c = s42b with the tail rows split over the CTA's 8 warps (one 16-key
# block each, two for the last), both blocks' products before their elementwise work, and the
# parts added at the top of the next window. The fold tests (3 forms), the narrow-last-block and
# PDL bitwise tests; the fwd+bwd timeline with the fold on / off at config 3 and V1 (1024, 4, 144);
# the graph step on / off, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runC-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s42c.so.xz
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "bwd_q_fold_tail or narrow_last_block_bitwise or tiled_backward_pdl" > $OUT/runC-test.txt 2>&1; echo "rc $?" >> $OUT/runC-test.txt
tail -n 12 $OUT/runC-test.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py fold $dt 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
  FWA_WINDOW_BWD_Q_FOLD=0 python benchmarks/results/session42/timeline_bwd.py nofold $dt 3 2>&1 | grep -v -i warn
done | tee $OUT/runC-timeline.txt
for r in 1 2; do
  FWA_WINDOW_BWD_Q_FOLD=0 python benchmarks/results/session36/graph_ab.py nofold 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
  python benchmarks/results/session36/graph_ab.py fold 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
done | tee $OUT/runC-graph.txt
echo "total $(( $(date +%s) - t0 )) s"
