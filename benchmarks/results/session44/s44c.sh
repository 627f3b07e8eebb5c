#!/usr/bin/env bash
# Session 44 run C: the host trims (no-grad forward calls skip the autograd node; the packed op's
# q / k / v views as one as_strided each; the output as one empty_strided). Build, bitwise against
# s43b (the kernels are unchanged: every output must be bitwise equal), CUDA suites of the touched
# paths, and the host time of one swapped window16 layer, s43b against this build, 2 rounds each.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44c C
fwa_bitwise_vs s43b C
timeout 230 python -m pytest -q -m cuda tests/test_qkvpacked.py tests/test_compile_opcheck.py tests/test_qk_inv_norm.py tests/test_dropout.py tests/test_lifecycle.py > $OUT/runC-packed.txt 2>&1 &
timeout 230 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py > $OUT/runC-modules.txt 2>&1 &
timeout 230 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_window_attention.py -k "not subprocess" > $OUT/runC-window-local.txt 2>&1 &
wait
echo "tests done $(( $(date +%s) - t0 )) s"
tail -n 3 $OUT/runC-packed.txt $OUT/runC-modules.txt $OUT/runC-window-local.txt
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  timeout 60 python benchmarks/results/session44/op_host.py $b 2 2>&1 | grep -v -i warn
done; done | tee $OUT/runC-op-host.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
echo "end $(( $(date +%s) - t0 )) s"
