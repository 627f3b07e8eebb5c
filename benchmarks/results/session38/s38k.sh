#!/usr/bin/env bash
# Session 38 run K (second review): build s38k = s38j with the copier's 128-byte swizzle offset from a
# named helper (kernel_utils.cuh sw128_offset, beside sw64_offset; the same arithmetic, the d = 64
# window loop 822 -> 820 instructions) and window_fwd_wgmma_shape_ok's Npad bound derived once. The
# wgmma forward tests (every warpgroup count, mma.sync at the same shapes, narrow-block bitwise);
# forward alone at d = 64 (N = 64, 100) and d = 32 (N = 144).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runK-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma_forward_in_subprocess or mma_sync_forward or narrow_last_block" > $OUT/runK-tests.txt 2>&1; echo "rc $?" >> $OUT/runK-tests.txt
grep -E "passed|failed|error|rc " $OUT/runK-tests.txt | tail -3
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runK-tests.txt | head -10
python benchmarks/results/session37/fwd_ab.py s38k 8 1024,4,100,64,16,10,v2 3 2>&1 | grep -v -i warn | tee $OUT/runK-fwd.txt
echo "total $(( $(date +%s) - t0 )) s"
