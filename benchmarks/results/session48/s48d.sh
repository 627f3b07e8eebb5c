#!/usr/bin/env bash
# Session 48 run D (H200): the CPB kernels' warps per CTA (FWA_CPB_MLP_WARPS, FWA_CPB_DTABLE_WARPS:
# launch configuration only, results bitwise the same). Build; CPB outputs bitwise against s47c
# (session47/cpb_bitwise.py); the CPB op's fwd+bwd graph at the model shapes per setting.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s48d D
fwa_bitwise_vs s47c D benchmarks/results/session47/cpb_bitwise.py
C=benchmarks/results/session48/cpb_graph.py
{
python $C default
FWA_CPB_DTABLE_WARPS=4 python $C dtable4
FWA_CPB_DTABLE_WARPS=2 python $C dtable2
FWA_CPB_MLP_WARPS=4 python $C mlp4
FWA_CPB_MLP_WARPS=2 python $C mlp2
python $C default
} 2>&1 | grep -v -i warn | tee $OUT/runD-cpb.txt
echo "done $(( $(date +%s) - t0 )) s"
