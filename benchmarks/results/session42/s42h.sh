#!/usr/bin/env bash
# Session 42 run H: build s42h = s42b + the backward's bm build in its preprocess grid (the first CTAs
# build bm, BwdParams::bm_build; the op launches no build before the backward). window_bitwise
# against s42b (same arithmetic: must be equal); the PDL / fold tests and the window suite's
# backward tests; the fwd+bwd timeline at configs 3 and 1; the graph step s42b / s42h at configs 3,
# V1 (1024, 4, 144) and 1, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runH-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s42h.so.xz
python tools/device/unxz.py tools/device/s42b_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runH-bitwise.txt
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "tiled_backward_pdl or bwd_q_fold_tail and default or (backward and not subprocess)" > $OUT/runH-test.txt 2>&1; echo "rc $?" >> $OUT/runH-test.txt
tail -n 3 $OUT/runH-test.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py s42h $dt 3 1 2>&1 | grep -v -i warn
done | tee $OUT/runH-timeline.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session36/graph_ab.py $b 3 1024,4,144,32,16,12,v1 1 2>&1 | grep -v -i warn
done; done | tee $OUT/runH-graph.txt
echo "total $(( $(date +%s) - t0 )) s"
