#!/usr/bin/env bash
# Session 42 run D: build s42d = s42b's fold (warpgroup 1 takes the tail rows, parts added inline)
# with FWA_WINDOW_BWD_Q_FOLD_WG0 = n0 warps of warpgroup 0 taking one 16-key block each (bar.arrive
# on a named barrier; default 1). The fold test at n0 = 0, 1, 2; the graph step with the fold off
# and at n0 = 0, 1, 2 (config 3, V1 (1024, 4, 144)), 2 rounds; the fwd+bwd timeline at n0 = 1.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runD-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s42d.so.xz
for n0 in 1 0 2; do
  FWA_WINDOW_BWD_Q_FOLD_WG0=$n0 timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "bwd_q_fold_tail and default" > $OUT/runD-test-$n0.txt 2>&1; echo "rc $?" >> $OUT/runD-test-$n0.txt
  echo "n0 $n0: $(tail -n 2 $OUT/runD-test-$n0.txt | tr '\n' ' ')"
done
echo "tests done $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  FWA_WINDOW_BWD_Q_FOLD=0 python benchmarks/results/session36/graph_ab.py nofold 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
  for n0 in 0 1 2; do
    FWA_WINDOW_BWD_Q_FOLD_WG0=$n0 python benchmarks/results/session36/graph_ab.py fold-wg0-$n0 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
  done
done | tee $OUT/runD-graph.txt
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py fold-wg0-1 $dt 3 2>&1 | grep -v -i warn | grep "span\|q_wg\|reduce"
done | tee $OUT/runD-timeline.txt
echo "total $(( $(date +%s) - t0 )) s"
