#!/usr/bin/env bash
# Session 44 run I: prepare() sets the fp32 bias / mask fields always and builds the forward's bm
# through window_attn_build_bm_deferred (the review leftover of session 43). Build, bitwise against
# s43b, window suite (not subprocess), packed / compile / modules groups, the forward-direct-rows
# and tiled-backward subprocess tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44i I
rm -f $OUT/s44i.so.xz
fwa_bitwise_vs s43b I
timeout 250 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runI-window.txt 2>&1 &
timeout 250 python -m pytest -q -m cuda tests/test_qkvpacked.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_modules.py > $OUT/runI-packed-modules.txt 2>&1 &
timeout 250 python -m pytest -q -m cuda tests/test_window_attention.py -k "reads_bias_mask or tiled_backward_for_small or forward_placements or mma_sync_forward_at" > $OUT/runI-sub.txt 2>&1 &
wait
echo "end $(( $(date +%s) - t0 )) s"
tail -n 2 $OUT/runI-window.txt $OUT/runI-packed-modules.txt $OUT/runI-sub.txt
