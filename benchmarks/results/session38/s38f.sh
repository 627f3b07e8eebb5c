#!/usr/bin/env bash
# Session 38 run F: build s38f = s38a + the d = 64 (Npad 64) wgmma forward reading bias and mask
# itself (window_attn_fwd_reads_bias_mask: no bm build before it). Tests: direct vs built bitwise
# (the wgmma cases, d = 64 among them), the wgmma forward's float64 checks; forward alone with
# FWA_WINDOW_FWD_DIRECT_BM=0 / default, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runF-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
strip --strip-all -o /tmp/s38f.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s38f.so > $OUT/s38f.so.xz
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "reads_bias_mask or wgmma_forward_in_subprocess" > $OUT/runF-tests.txt 2>&1; echo "rc $?" >> $OUT/runF-tests.txt
grep -E "passed|failed|error|rc " $OUT/runF-tests.txt | tail -3
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runF-tests.txt | head -10
F=benchmarks/results/session37/fwd_ab.py
for round in 1 2; do
  for e in FWA_WINDOW_FWD_DIRECT_BM=0 FWA_WINDOW_FWD_DIRECT_BM=1; do
    env $e python $F $e 8 256,4,49,64,4,7,v2 1024,4,64,64,16,8,v1 3 2>&1 | grep -v -i warn
  done
done | tee $OUT/runF-fwd.txt
echo "total $(( $(date +%s) - t0 )) s"
