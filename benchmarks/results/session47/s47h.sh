#!/usr/bin/env bash
# Session 47 run H (H200): the CPB forward kernel loads every w2 value of its heads with w1 and b1,
# before h's stores (one round trip per warp instead of one more per head). Build; CPB outputs
# bitwise against run C's build (carried .devbuild/s47c.so.xz); the CPB / module CUDA tests;
# bench_models swapped / ceiling eager on base_window12_192 (24 layers) and window16.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s47h H
rm -f $OUT/s47h.so.xz
S=benchmarks/results/session47
fwa_unpack .devbuild/s47c.so.xz /tmp/base.so
cp /tmp/base.so flash_window_attn/_C.abi3.so
timeout 60 python $S/cpb_bitwise.py save /tmp/cpb_ref.pt 2>&1 | tail -1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 60 python $S/cpb_bitwise.py cmp /tmp/cpb_ref.pt 2>&1 | tail -1 | tee $OUT/runH-bitwise.txt
timeout 120 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_modules.py 2>&1 | tail -2 | tee $OUT/runH-tests.txt
echo "tests $(( $(date +%s) - t0 )) s"
timeout 200 python benchmarks/bench_models.py --models swinv2_base_window12_192,swinv2_tiny_window16_256 --variants swap,ceiling \
  --no-compile --out $OUT/models-h.json > $OUT/runH-models.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runH-models.log | grep -i "== \|GPU time" | head -10
