#!/usr/bin/env bash
# Session 43 run B: build s43b = main + the review's twins removed: the query side's elementwise pair
# operations as one helper (bwd_q_ds_pair, sub-blocks and folded tail rows), the mma.sync tail
# warps' lane geometry as TailWarpLanes (warp_mma.cuh; RowTailWarp derives from it: the forward's
# cubins are byte-identical offline), plan_bwd's redundant `!small`. Same operations: window_bitwise
# against s42h must be equal. The folded-tail and PDL tests and the window suite's non-subprocess
# tests; the fwd+bwd timeline at configs 3 and 1; the graph step s42h / s43b, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runB-build.txt
grep -E " error|error:|C7511" /tmp/build.txt | head -20 | tee -a $OUT/runB-build.txt
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s43b.so.xz
python tools/device/unxz.py tools/device/s42h_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runB-bitwise.txt
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" -x > $OUT/runB-window.txt 2>&1; echo "rc $?" >> $OUT/runB-window.txt
tail -n 3 $OUT/runB-window.txt
timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py -k "bwd_q_fold_tail or tiled_backward_pdl or narrow_last_block" > $OUT/runB-test-sub.txt 2>&1; echo "rc $?" >> $OUT/runB-test-sub.txt
tail -n 3 $OUT/runB-test-sub.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py s43b $dt 3 1 2>&1 | grep -v -i warn
done | tee $OUT/runB-timeline.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session36/graph_ab.py $b 3 1024,4,144,32,16,12,v1 1 2>&1 | grep -v -i warn
done; done | tee $OUT/runB-graph.txt
echo "total $(( $(date +%s) - t0 )) s"
