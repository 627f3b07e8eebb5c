#!/usr/bin/env bash
# Session 44 run D: run C's host trims with caller_norms decided from the flags (run C's numel()
# failed under torch.compile(dynamic=True) on CUDA). Build, bitwise against s43b, the CUDA suites of
# the touched paths, the host time of one swapped layer (s43b / this build, 3 rounds each), and
# bench_models window16 swapped, eager and compiled.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44d D
fwa_bitwise_vs s43b D
timeout 200 python -m pytest -q -m cuda tests/test_qkvpacked.py tests/test_compile_opcheck.py tests/test_qk_inv_norm.py tests/test_dropout.py tests/test_lifecycle.py > $OUT/runD-packed.txt 2>&1 &
timeout 200 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_local_attention.py -k "not subprocess" > $OUT/runD-modules-local.txt 2>&1 &
wait
echo "tests done $(( $(date +%s) - t0 )) s"
tail -n 2 $OUT/runD-packed.txt $OUT/runD-modules-local.txt
for r in 1 2 3; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  timeout 60 python benchmarks/results/session44/op_host.py $b 2 2>&1 | grep -v -i warn
done; done | tee $OUT/runD-op-host.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
left=$(( 585 - ($(date +%s) - t0) ))
timeout $left python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap_compile,swap --time-budget $(( left - 30 )) --out $OUT/models-nvidia-h100-80gb-hbm3-session44d-swinv2_tiny_window16_256.json > $OUT/runD-models.log 2>&1
echo "models rc $? $(( $(date +%s) - t0 )) s"
grep -E "^(c|d) swapped|host issue" $OUT/runD-models.log
