#!/usr/bin/env bash
# Session 26 run A: s26a (the wg query side's later launch batches via window_chunk_work with a
# shifted block index; the dq-part workspace size from window_bwd_dq_partial_elems): window /
# dropout / extremes CUDA suites, window-family sanitizers, then the causal sliding config.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py tests/test_extremes.py 2>&1 | tail -6 > $OUT/tests.txt
cat $OUT/tests.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 150 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
tail -6 $OUT/san.txt
timeout 120 python benchmarks/bench_sliding_window.py --configs 4 --no-scaling --out $OUT/sliding-nvidia-h100-80gb-hbm3-session26-config4.json > $OUT/bench_sliding4.log 2>&1
echo bench rc $?; tail -8 $OUT/bench_sliding4.log
