#!/usr/bin/env bash
# Session 44 run E: the packed op's host time alone, s43b against this build (run D's sources),
# 4 alternations of one process per build.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s44e E
python tools/device/unxz.py tools/device/s43b_so/_C.abi3.so.xz /tmp/base.so
for r in 1 2 3 4; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  timeout 60 python benchmarks/results/session44/op_micro.py $b 2>&1 | grep -v -i warn
done; done | tee $OUT/runE-op-micro.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
rm -f $OUT/s44e.so.xz
echo "end $(( $(date +%s) - t0 )) s"
