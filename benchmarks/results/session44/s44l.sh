#!/usr/bin/env bash
# Session 44 run L: the final build (the no-node path counting the mask): bitwise against s43b and
# the CUDA suites of the autograd kernels.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44l L
rm -f $OUT/s44l.so.xz
fwa_bitwise_vs s43b L
timeout 200 python -m pytest -q -m cuda tests/test_qkvpacked.py tests/test_compile_opcheck.py tests/test_qk_inv_norm.py tests/test_dropout.py > $OUT/runL-packed.txt 2>&1 &
timeout 200 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_local_attention.py -k "not subprocess" > $OUT/runL-modules-local.txt 2>&1 &
wait
echo "end $(( $(date +%s) - t0 )) s"
tail -n 1 $OUT/runL-packed.txt $OUT/runL-modules-local.txt
