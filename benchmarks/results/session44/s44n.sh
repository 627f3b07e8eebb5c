#!/usr/bin/env bash
# Session 44 run N: after the final review (window_attn_build_bm from the BwdParams, ask_inv_norms
# on any_requires_grad): build, bitwise against s43b, window suite (not subprocess), packed /
# compile-opcheck / qk_inv_norm.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44n N
rm -f $OUT/s44n.so.xz
fwa_bitwise_vs s43b N
timeout 150 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runN-window.txt 2>&1 &
timeout 150 python -m pytest -q -m cuda tests/test_qkvpacked.py tests/test_compile_opcheck.py tests/test_qk_inv_norm.py > $OUT/runN-packed.txt 2>&1 &
wait
echo "end $(( $(date +%s) - t0 )) s"
tail -n 1 $OUT/runN-window.txt $OUT/runN-packed.txt
