#!/usr/bin/env bash
# Session 38 run J (final review): build s38j = s38h with the forward's two wgmma dispatch blocks
# (head dim 32, head dims 33..64) as one. The wgmma forward test with the planned warpgroups, the
# narrow-block and reads-bias-mask bitwise tests; forward alone at d = 64 (N = 64, 100) and d = 32
# (N = 144, 256), where the dispatch must pick the same kernels as s38h (run H's figures).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runJ-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma_forward_in_subprocess and plan or narrow_last_block or reads_bias_mask" > $OUT/runJ-tests.txt 2>&1; echo "rc $?" >> $OUT/runJ-tests.txt
grep -E "passed|failed|error|rc " $OUT/runJ-tests.txt | tail -3
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runJ-tests.txt | head -10
python benchmarks/results/session37/fwd_ab.py s38j 8 1024,4,100,64,16,10,v2 3 1 2>&1 | grep -v -i warn | tee $OUT/runJ-fwd.txt
echo "total $(( $(date +%s) - t0 )) s"
