#!/usr/bin/env bash
# session 21 run 1: build s21a (= 01700fd: bm_pdl set in fwd_cuda_impl, env_switch_on) against
# s20g (d705440): bitwise errors, time_ops, CUDA tests window + compile/opcheck + lifecycle.
export PYTHONPATH=$PWD
for B in s20g s21a; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee $OUT/summary.txt
use s20g; timeout 100 python tools/device/s16err.py g > $OUT/err_g.txt 2>&1
use s21a; timeout 100 python tools/device/s16err.py a > $OUT/err_a.txt 2>&1
sed 's/^[^ ]* //' $OUT/err_g.txt > /tmp/eg; sed 's/^[^ ]* //' $OUT/err_a.txt > /tmp/ea
echo "err lines g $(wc -l < /tmp/eg) a $(wc -l < /tmp/ea) differing $(diff /tmp/eg /tmp/ea | grep -c '^<')" | tee -a $OUT/summary.txt
for B in s20g s21a; do use $B
timeout 100 python tools/time_ops.py --dtype bf16 --configs 0,5,7,6,1,3 --label $B 2>&1 | grep "^\[" | cut -c1-90 | tee -a $OUT/summary.txt
done
use s21a
timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_compile_opcheck.py tests/test_lifecycle.py 2>&1 | tail -4 | tee -a $OUT/summary.txt
FWA_WINDOW_PDL=0 timeout 100 python -m pytest -q -m cuda tests/test_window_attention.py -k "ordering or wgmma" 2>&1 | tail -2 | tee -a $OUT/summary.txt
