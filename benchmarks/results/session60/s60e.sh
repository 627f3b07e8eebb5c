#!/usr/bin/env bash
# Session 60 run E (H200): main's build (s60c, carried): win(256,256) (bench config 1) GPU time with
# the warp-specialised backward forced on that small grid (both sides: the residual-D form, out_lo
# from the forward; or the key side alone), against the default plain backward.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runE.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s60c.so.xz flash_window_attn/_C.abi3.so
G=benchmarks/results/session45/local_graph_ab.py
for r in 1 2; do
    timeout 40 python $G default 1 2>&1 | grep -v -i warn
    FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_BWD_KV_WS=1 timeout 40 python $G ws_both 1 2>&1 | grep -v -i warn
done
FWA_LOCAL_BWD_KV_WS=1 timeout 40 python $G ws_kv 1 2>&1 | grep -v -i warn
echo "end $(( $(date +%s) - t0 )) s"
