#!/usr/bin/env bash
# session 20 run 6: build e (= a + the wgmma forward as a programmatic dependent of the bm build,
# its Npad-64 first copies before griddepcontrol.wait; logit scale converted before the build)
# against a: bitwise errors, A/B timing, CUDA tests incl. compile / CUDA graphs and the new ordering test.
export PYTHONPATH=$PWD
for B in s20a s20e; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
use s20a; timeout 100 python tools/device/s16err.py a > $OUT/err_a.txt 2>&1
use s20e; timeout 100 python tools/device/s16err.py e > $OUT/err_e.txt 2>&1
sed 's/^[^ ]* //' $OUT/err_a.txt > /tmp/ea; sed 's/^[^ ]* //' $OUT/err_e.txt > /tmp/ee
echo "err lines a $(wc -l < /tmp/ea) e $(wc -l < /tmp/ee) differing $(diff /tmp/ea /tmp/ee | grep -c '^<')" | tee $OUT/summary.txt
for r in 1 2; do for B in s20a s20e; do use $B
timeout 100 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,1,3 --label $B 2>&1 | grep "^\[" | cut -c1-90 | tee -a $OUT/summary.txt
done; done
use s20e
timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_compile_opcheck.py tests/test_lifecycle.py 2>&1 | tail -4 | tee -a $OUT/summary.txt
