#!/usr/bin/env bash
# Session 48 run E (H200): the CPB MLP backward staging all of its rows in shared memory with one
# barrier (cpb_mlp_bwd_kernel: the same rows per thread and operations, so bitwise the same). Build;
# CPB outputs bitwise against s47c; the CPB / modules CUDA tests; the CPB op's fwd+bwd graph at the
# model shapes, s47c and the new build, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s48e E
fwa_bitwise_vs s47c E benchmarks/results/session47/cpb_bitwise.py
timeout 200 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_modules.py 2>&1 | tail -3 | tee $OUT/runE-tests.txt
echo "tests $(( $(date +%s) - t0 )) s"
C=benchmarks/results/session48/cpb_graph.py
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python $C $b 2>&1 | grep -v -i warn
done; done | tee $OUT/runE-cpb.txt
echo "done $(( $(date +%s) - t0 )) s"
