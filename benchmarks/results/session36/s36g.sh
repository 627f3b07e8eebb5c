#!/usr/bin/env bash
# Session 36 runs G / H (main's kernels, this session's final build): bench_window_attention, every
# peer, fp16 and bf16, configs $1 (comma list), JSON / PNG / log under $OUT as window-$2.*. Builds
# when no .so was carried (tools/device/s36g_so), and returns it compressed.
export PYTHONPATH=$PWD
if [ -f tools/device/s36g_so/_C.abi3.so.xz ]; then
  python tools/device/unxz.py tools/device/s36g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
else
  t0=$(date +%s)
  MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
  echo "build rc $? $(( $(date +%s) - t0 )) s"
  strip --strip-all -o /tmp/s36g.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s36g.so > $OUT/s36g_C.abi3.so.xz
fi
timeout 500 python benchmarks/bench_window_attention.py --configs $1 --out $OUT/window-$2.json > $OUT/window-$2.log 2>&1
echo "bench rc $?"
tail -28 $OUT/window-$2.log
