#!/usr/bin/env bash
# Session 37 run I: build s37i (= main be7e5b1's kernels, s37g); per-kernel GPU time of the fwd+bwd
# step at (4096, 3, 64) fp16 (session33/prof_kernels.py), s36g / s37i alternating, 2 rounds: where
# run H's 1-2 % fp16 difference comes from.
export PYTHONPATH=$PWD
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $?"
cp flash_window_attn/_C.abi3.so /tmp/s37i.so
python tools/device/unxz.py tools/device/s36g_so/_C.abi3.so.xz /tmp/s36g.so
for r in 1 2; do
  for b in s37i s36g; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    python benchmarks/results/session33/prof_kernels.py $b --fp16 0 2>&1 | grep -v -i warn
  done
done | tee $OUT/runI-prof.txt
cp /tmp/s37i.so flash_window_attn/_C.abi3.so
