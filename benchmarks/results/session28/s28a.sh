#!/usr/bin/env bash
# Session 28 run A: (1) host time of the sliding-window fwd+bwd before / after the host trims
# (no zero-filled lse gradient: set_materialize_grads(false); the exact-D workspace zeroed by
# cudaMemsetAsync instead of at::zeros), run I's build (s27i) against this one (s28a);
# (2) window / local CUDA autograd tests on s28a; (3) bench_sliding_window configs 0, 1 (the two
# misses) on s28a; (4) where the window16 eager training step's GPU time goes, swapped vs ceiling.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s27i_so/_C.abi3.so.xz /tmp/i.so
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz /tmp/a.so
for r in 1 2; do for so in i a; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  for c in 1 0; do
    echo "== round $r build $so config $c"
    timeout 60 python tools/host_profile_local.py --config $c --steps 300 2>&1 | grep -E "pass|GPU|zeros|fill_|Memset|cudaLaunch"
  done
done; done > $OUT/host.txt 2>&1
cat $OUT/host.txt
cp /tmp/a.so flash_window_attn/_C.abi3.so
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_compile_opcheck.py tests/test_window_attention.py -x -k "grad or backward or compile or opcheck or graph" 2>&1 | tail -3 > $OUT/tests.txt
cat $OUT/tests.txt
timeout 150 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding01.json > $OUT/sliding01.log 2>&1
tail -40 $OUT/sliding01.log
timeout 150 python tools/model_profile.py --variants swap,ceiling --mode train --steps 5 --top 40 > $OUT/model_profile.txt 2>&1
cat $OUT/model_profile.txt
