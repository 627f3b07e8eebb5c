#!/usr/bin/env bash
# Session 23 run A: the wgmma form of the tiled backward at d <= 32 (correctness, A/B kernel times),
# then the N = 256 backward prototypes.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s23a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
nvidia-smi -L
python -c "import flash_window_attn, torch; print(torch.__version__, torch.cuda.get_device_name())"
timeout 300 python -m pytest -q -x tests/test_window_attention.py -k "tiled_backward_d32_forms or global_dbias or tiled_backward_for_small or (wgmma_forward_in_subprocess and plan)" 2>&1 | tail -15 | tee $OUT/tests1.txt
for m in 0 1; do echo "== FWA_WINDOW_BWD_WGMMA=$m"; FWA_WINDOW_BWD_WGMMA=$m timeout 120 python tools/kernel_breakdown.py --configs 1,2,3,4 2>&1 | grep -E "GPU time|bwd_kv|bwd_q|preprocess|dsum|fwd"; done 2>&1 | tee $OUT/kb.txt
timeout 300 bash benchmarks/results/session22/next/run-bwd-protos.sh 2>&1 | tail -40 > $OUT/protos.txt
