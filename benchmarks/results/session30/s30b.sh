#!/usr/bin/env bash
# Session 30 run B: the wgmma forward with P v of block kt - 1 completing during block kt's softmax
# (kDeferPv): s30c = 3 warpgroups per CTA in the fixed form (bf16 Npad 256) + the deferral there and
# at Npad <= 128; s30d = s30c + the fixed form (3 groups, deferral) at bf16 Npad 192 too; s30a = 3
# groups without the deferral; old = s29g (main). Forward kernel time, 2 rounds; CUDA tests on s30d.
export PYTHONPATH=$PWD
for b in s29g s30a s30c s30d; do python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz /tmp/$b.so; done
S="--shape 512,4,256,32,16,16,v2 --shape 1024,6,256,32,16,16,v2 --shape 512,4,144,32,16,12,v2 --shape 1024,4,100,32,16,10,v2 --shape 512,4,256,32,16,16,v1"
for r in 1 2; do for b in s29g s30a s30c s30d; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  echo "== $b round $r"
  timeout 60 python tools/kernel_breakdown.py $S --iters 20 2>&1 | grep -E "GPU time|fwd_wgmma"
  [ $r = 1 ] && timeout 40 python tools/kernel_breakdown.py --dtype fp16 --shape 1024,6,256,32,16,16,v2 --shape 1024,4,100,32,16,10,v2 --iters 20 2>&1 | grep -E "GPU time|fwd_wgmma"
done; done
cp /tmp/s30d.so flash_window_attn/_C.abi3.so
timeout 280 python -m pytest -q -m cuda tests/test_extremes.py -x > $OUT/tests_extremes.txt 2>&1 &
timeout 280 python -m pytest -q -m cuda tests/test_window_attention.py -x > $OUT/tests_window.txt 2>&1 &
wait
tail -3 $OUT/tests_extremes.txt $OUT/tests_window.txt
