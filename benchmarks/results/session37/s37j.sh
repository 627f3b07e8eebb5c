#!/usr/bin/env bash
# Session 37 run J (the final review): build s37j = main with check_fwd_args / check_bwd_args
# setting WindowAttnSizes::inv_norms. CUDA op-layer tests; graph step GIVEN_NORMS 0 / 1 at
# (512, 4, 144): the given norms still reach the backward.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runJ-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runJ-build.txt
grep -E " error|error:" $OUT/runJ-build.txt | head -20
timeout 300 python -m pytest -q -m cuda tests/test_qk_inv_norm.py tests/test_errors.py tests/test_compile_opcheck.py tests/test_qkvpacked.py tests/test_dropout.py > $OUT/runJ-ops.txt 2>&1; echo "rc $?" >> $OUT/runJ-ops.txt
grep -E "passed|failed|rc " $OUT/runJ-ops.txt | tail -2; grep -E "^FAILED" $OUT/runJ-ops.txt | head
for e in FWA_WINDOW_GIVEN_NORMS=0 FWA_WINDOW_GIVEN_NORMS=1; do
  env $e python benchmarks/results/session36/graph_ab.py $e 3 2>&1 | grep -v -i warn
done | tee $OUT/runJ-graph.txt
python benchmarks/results/session37/fwd_ab.py s37j 3 2>&1 | grep -v -i warn | tee -a $OUT/runJ-graph.txt
