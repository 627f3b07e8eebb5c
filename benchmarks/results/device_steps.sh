# Steps the device scripts share (benchmarks/results/session*/s*.sh; source this file from the
# repository root, with $OUT set by the device tool and t0 the script's start, $(date +%s)).

# fwa_build TAG RUN: builds the extension in place for sm_90a, logs the result and any error or
# C7511 (wgmma serialised) line to $OUT/runRUN-build.txt, keeps the .so as /tmp/new.so and
# its stripped, xz-compressed copy as $OUT/TAG.so.xz (restore it with fwa_unpack; to reuse it in a
# later call, copy it under .devbuild/ and name it in the device tool's `carry`).
fwa_build() {
    local tag=$1 run=$2
    MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
    echo "build rc $? $(( $(date +%s) - t0 )) s" | tee "$OUT/run$run-build.txt"
    grep -E " error|error:|C7511" /tmp/build.txt | head -20 | tee -a "$OUT/run$run-build.txt"
    cp flash_window_attn/_C.abi3.so /tmp/new.so
    strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > "$OUT/$tag.so.xz"
}

# fwa_unpack XZ DEST: a build saved by fwa_build (TAG.so.xz) or carried under .devbuild/ (the
# device tool's `carry`), decompressed to DEST.
fwa_unpack() {
    python -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" "$1" "$2"
}

# fwa_bitwise_vs BASE RUN [TOOL]: TOOL (default tools/window_bitwise.py; tools/local_bitwise.py for
# the sliding-window op; any script taking `save PATH` / `cmp PATH`) with the carried build
# .devbuild/BASE.so.xz (kept as /tmp/base.so), then with /tmp/new.so, which stays installed; the
# verdict in $OUT/runRUN-bitwise.txt.
fwa_bitwise_vs() {
    local base=$1 run=$2 tool=${3:-tools/window_bitwise.py}
    fwa_unpack ".devbuild/${base}.so.xz" /tmp/base.so
    cp /tmp/base.so flash_window_attn/_C.abi3.so
    timeout 120 python "$tool" save /tmp/bitwise_ref.pt > /dev/null 2>&1
    cp /tmp/new.so flash_window_attn/_C.abi3.so
    timeout 120 python "$tool" cmp /tmp/bitwise_ref.pt 2>&1 | grep -v -i warn | tail -4 | tee "$OUT/run$run-bitwise.txt"
}

# fwa_graph_ab RUN SPEC...: the fwd+bwd step in a CUDA graph (session36/graph_ab.py) with
# /tmp/base.so and /tmp/new.so in turn, 2 rounds, into $OUT/runRUN-graph.txt.
fwa_graph_ab() {
    local run=$1 b r
    shift
    for r in 1 2; do for b in base new; do
        cp /tmp/$b.so flash_window_attn/_C.abi3.so
        python benchmarks/results/session36/graph_ab.py $b "$@" 2>&1 | grep -v -i warn
    done; done | tee "$OUT/run$run-graph.txt"
}

# fwa_local_graph_ab CONFIG...: the sliding-window op's forward and fwd+bwd GPU time
# (session45/local_graph_ab.py) at bench_sliding_window CONFIGs with /tmp/base.so and /tmp/new.so in
# turn, 2 rounds, to stdout; /tmp/new.so stays installed.
fwa_local_graph_ab() {
    local r b
    for r in 1 2; do for b in base new; do
        cp /tmp/$b.so flash_window_attn/_C.abi3.so
        timeout 150 python benchmarks/results/session45/local_graph_ab.py $b "$@" 2>&1 | grep -v -i warn
    done; done
    cp /tmp/new.so flash_window_attn/_C.abi3.so
}

# fwa_local_timeline_ab ROUNDS PATTERN CONFIG DTYPE: the per-kernel graph timeline of the
# sliding-window op's fwd+bwd (session46/graph_timeline.py, ours) with /tmp/base.so and
# /tmp/new.so in turn, ROUNDS times, its lines matching the extended regex PATTERN ("" for all);
# /tmp/new.so stays installed.
fwa_local_timeline_ab() {
    local rounds=$1 pattern=$2 config=$3 dtype=$4 r b
    for r in $(seq "$rounds"); do for b in base new; do
        cp /tmp/$b.so flash_window_attn/_C.abi3.so
        echo "== timeline $b"
        timeout 100 python benchmarks/results/session46/graph_timeline.py "$config" "$dtype" ours 2>&1 | grep -v -i warn | grep -E "$pattern"
    done; done
    cp /tmp/new.so flash_window_attn/_C.abi3.so
}
