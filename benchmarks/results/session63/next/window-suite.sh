#!/usr/bin/env bash
# For the next device session (session 63's checklist item 2): the window op's CUDA tests that
# session 63 did not rerun after landing the CUDA-core V2 norms (98b8af3), on main's build, in two
# parts (one device call each, ~5 min): PART=1 test_window_attention.py's CUDA tests; PART=2 the
# packed-qkv, dropout, random-problem, compile / opcheck and lifecycle CUDA tests. Expects main's
# build as .devbuild/BUILD.so.xz (carried) or builds it (fwa_build) when BUILD is unset.
#   PART=1 BUILD=s64a bash benchmarks/results/session63/next/window-suite.sh
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/window-suite-part${PART:-1}.txt) 2>&1
source benchmarks/results/device_steps.sh
if [ -n "${BUILD:-}" ]; then fwa_unpack .devbuild/$BUILD.so.xz flash_window_attn/_C.abi3.so; else fwa_build main S; fi
if [ "${PART:-1}" = 1 ]; then
  timeout 540 python -m pytest -q -m cuda tests/test_window_attention.py 2>&1 | tail -5
else
  timeout 540 python -m pytest -q -m cuda tests/test_qkvpacked.py tests/test_dropout.py tests/test_random_problems.py \
    tests/test_compile_opcheck.py tests/test_lifecycle.py 2>&1 | tail -5
fi
echo "end $(( $(date +%s) - t0 )) s"
