#!/usr/bin/env bash
# Session 42 run K (not kept: slower; tools/patches/window-bwd-q-wg-d-from-partials-SLOWER.patch): build s42k = s42h + the warpgroup query side taking D from the key side's
# partials itself (no dsum kernel before it). window_bitwise against s42h (same arithmetic: must be
# equal); the PDL / fold / key-range tests; the timeline at configs 3 and 1; the graph step
# s42h / s42k at configs 3, 1 and 4 (N = 576, key ranges), 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runK-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s42k.so.xz
python tools/device/unxz.py tools/device/s42h_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runK-bitwise.txt
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "tiled_backward_pdl or (bwd_q_fold_tail and default) or key_range" > $OUT/runK-test.txt 2>&1; echo "rc $?" >> $OUT/runK-test.txt
tail -n 3 $OUT/runK-test.txt
echo "tests done $(( $(date +%s) - t0 )) s"
python benchmarks/results/session42/timeline_bwd.py s42k bf16 3 1 2>&1 | grep -v -i warn | tee $OUT/runK-timeline.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session36/graph_ab.py $b 3 1 4 2>&1 | grep -v -i warn
done; done | tee $OUT/runK-graph.txt
echo "total $(( $(date +%s) - t0 )) s"
