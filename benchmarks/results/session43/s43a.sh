#!/usr/bin/env bash
# Session 43 run A: build s43a = main (s42h's kernels) + the backward key side's persistent grid
# (wgmma form: at most the resident CTAs, each walking items blockIdx.x + k gridDim.x, the next
# item's k, v and first query block copied during this item's last block; FWA_WINDOW_KV_PERSIST=0:
# one CTA per item). window_bitwise against s42h (must be equal: same operations per item); the new
# persistent tests (bitwise vs KV_PERSIST=0, float64) and the window suite's non-subprocess tests;
# the fwd+bwd timeline at configs 3 and 1 (default and KV_PERSIST=0); the graph step s42h / s43a at
# configs 3, V1 (1024, 4, 144), 1 and 4, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runA-build.txt
grep -E " error|error:|C7511" /tmp/build.txt | head -20 | tee -a $OUT/runA-build.txt
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s43a.so.xz
python tools/device/unxz.py tools/device/s42h_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runA-bitwise.txt
timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_persistent" > $OUT/runA-test-persist.txt 2>&1; echo "rc $?" >> $OUT/runA-test-persist.txt
tail -n 3 $OUT/runA-test-persist.txt
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" -x > $OUT/runA-window.txt 2>&1; echo "rc $?" >> $OUT/runA-window.txt
tail -n 3 $OUT/runA-window.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py s43a $dt 3 1 2>&1 | grep -v -i warn
  FWA_WINDOW_KV_PERSIST=0 python benchmarks/results/session42/timeline_bwd.py s43a-nopersist $dt 3 1 2>&1 | grep -v -i warn
done | tee $OUT/runA-timeline.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session36/graph_ab.py $b 3 1024,4,144,32,16,12,v1 1 4 2>&1 | grep -v -i warn
done; done | tee $OUT/runA-graph.txt
echo "total $(( $(date +%s) - t0 )) s"
