#!/usr/bin/env bash
# Session 42 run G: build s42g = s42b + the backward preprocess taking 4 rows per thread group (all
# loads issued first). window_bitwise against s42b (the same per-row arithmetic: must be equal); the
# fwd+bwd timeline at config 3; the graph step s42b / s42g at config 3 and V1 (1024, 4, 144), 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runG-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s42g.so.xz
python tools/device/unxz.py tools/device/s42b_so/_C.abi3.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runG-bitwise.txt
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py s42g $dt 3 2>&1 | grep -v -i warn
done | tee $OUT/runG-timeline.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session36/graph_ab.py $b 3 1024,4,144,32,16,12,v1 1 2>&1 | grep -v -i warn
done; done | tee $OUT/runG-graph.txt
echo "total $(( $(date +%s) - t0 )) s"
