#!/usr/bin/env bash
# Session 30 run E: the streaming wgmma forward with S one block ahead (s30g): forward kernel time
# against s30f (run D's form: S, softmax and P v in series per block) and the mma.sync forward
# (FWA_WINDOW_WGMMA_STREAM=0); the streaming-forward tests (every form), the N > 256 window tests.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s30f_so/_C.abi3.so.xz /tmp/f.so
python tools/device/unxz.py tools/device/s30g_so/_C.abi3.so.xz /tmp/g.so
S="--shape 128,6,576,32,4,24,v2 --shape 256,4,400,32,4,20,v2 --shape 512,3,289,32,4,17,v1"
for r in 1 2; do for b in g f mma; do
  if [ $b = mma ]; then cp /tmp/g.so flash_window_attn/_C.abi3.so; export FWA_WINDOW_WGMMA_STREAM=0; else cp /tmp/$b.so flash_window_attn/_C.abi3.so; export FWA_WINDOW_WGMMA_STREAM=1; fi
  echo "== $b round $r"
  timeout 60 python tools/kernel_breakdown.py $S --iters 20 2>&1 | grep -E "GPU time|fwd"
  [ $r = 1 ] && timeout 60 python tools/kernel_breakdown.py --dtype fp16 --shape 128,6,576,32,4,24,v2 --iters 20 2>&1 | grep -E "GPU time|fwd"
done; done
unset FWA_WINDOW_WGMMA_STREAM
cp /tmp/g.so flash_window_attn/_C.abi3.so
timeout 250 python -m pytest -q -m cuda tests/test_window_attention.py -k "stream or 576 or 1024 or key_ranges or dbias_slice or d32_forms" > $OUT/tests_window_n.txt 2>&1 &
timeout 250 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py -x > $OUT/tests_extremes.txt 2>&1 &
wait
for f in $OUT/tests_*.txt; do echo "== $f"; tail -n 3 $f; done
