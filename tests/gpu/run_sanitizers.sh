#!/usr/bin/env bash
# Runs a compact GPU workload that launches every CUDA kernel of flash_window_attn, window and
# sliding-window (local) attention alike (tests/gpu/sanitizer_selection.py), under
# compute-sanitizer memcheck, racecheck, initcheck and synccheck, each with --error-exitcode 1, and
# prints one summary line per tool:
#
#     bash tests/gpu/run_sanitizers.sh [LOG_DIR]          # LOG_DIR defaults to ./sanitizer_logs
#
#   memcheck: 0 errors  (exit 0, <seconds> s, 175 problems ok)
#
# LOG_DIR/<tool>.log is the sanitizer's report, LOG_DIR/<tool>.out the workload's own output.
# memcheck and initcheck run with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every tensor is its own
# cudaMalloc, so an access past a tensor's end is outside any allocation; memcheck also pads each
# allocation). No leak check: the CUDA context and libraries keep allocations alive at exit.
# racecheck runs the smaller "race" profile of the workload.
#
# Environment:
#   COMPUTE_SANITIZER   path of the compute-sanitizer binary (else: PATH, $CUDA_HOME/bin,
#                       $CUDA_PATH/bin, /usr/local/cuda/bin, /usr/local/cuda-*/bin newest first,
#                       the nvidia-cuda-sanitizer-api wheel in Python's site-packages or in
#                       ./.sanitizer (pip install --target .sanitizer nvidia-cuda-sanitizer-api==13.0.*))
#   PYTHON              python interpreter (default: python3, or python)
#   SANITIZER_TOOLS     tools to run (default: "memcheck racecheck initcheck synccheck")
#   SANITIZER_EXTRA_ARGS  extra compute-sanitizer arguments for every tool, e.g.
#                       "--kernel-name regex=window_attn|simt_|build_bm|reduce_|local_" to check only
#                       this package's kernels (local_: the sliding-window kernels)
#   SELECTION_ARGS      extra arguments for sanitizer_selection.py (e.g. "--no-check", or
#                       "--family local" for the sliding-window kernels only)
# Exit status: 0 when every tool reports 0 errors and the workload passed, 1 otherwise, 2 when
# compute-sanitizer or a GPU is missing.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
log_dir="${1:-./sanitizer_logs}"
mkdir -p "$log_dir" || { echo "run_sanitizers: cannot create $log_dir" >&2; exit 2; }
log_dir="$(cd "$log_dir" && pwd)"

if [[ -n "${PYTHON:-}" ]]; then
    py="$PYTHON"
elif command -v python3 >/dev/null 2>&1; then
    py=python3
else
    py=python
fi

find_sanitizer() {
    local c
    if [[ -n "${COMPUTE_SANITIZER:-}" ]]; then
        [[ -x "$COMPUTE_SANITIZER" ]] && { echo "$COMPUTE_SANITIZER"; return 0; }
        echo "run_sanitizers: COMPUTE_SANITIZER=$COMPUTE_SANITIZER is not an executable" >&2
        return 1
    fi
    if c="$(command -v compute-sanitizer 2>/dev/null)"; then echo "$c"; return 0; fi
    for c in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
        [[ -n "$c" && -x "$c/bin/compute-sanitizer" ]] && { echo "$c/bin/compute-sanitizer"; return 0; }
        [[ -n "$c" && -x "$c/compute-sanitizer/compute-sanitizer" ]] && {
            echo "$c/compute-sanitizer/compute-sanitizer"; return 0; }
    done
    for c in $(ls -d /usr/local/cuda-*/ 2>/dev/null | sort -V -r); do
        [[ -x "${c}bin/compute-sanitizer" ]] && { echo "${c}bin/compute-sanitizer"; return 0; }
    done
    # the nvidia-cuda-sanitizer-api wheel (nvidia/cu13/bin/compute-sanitizer and older layouts)
    local roots=("$repo/.sanitizer")
    local site
    site="$("$py" -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)"
    while IFS= read -r c; do [[ -n "$c" ]] && roots+=("$c"); done <<< "$site"
    for c in "${roots[@]}"; do
        [[ -d "$c/nvidia" ]] || continue
        local hit
        hit="$(find "$c/nvidia" -maxdepth 4 -type f -name compute-sanitizer -perm -u+x 2>/dev/null | sort | tail -n 1)"
        [[ -n "$hit" ]] && { echo "$hit"; return 0; }
    done
    return 1
}

if ! san="$(find_sanitizer)"; then
    echo "run_sanitizers: compute-sanitizer not found (looked at \$COMPUTE_SANITIZER, PATH, \$CUDA_HOME/bin," \
         "\$CUDA_PATH/bin, /usr/local/cuda*/bin, site-packages/nvidia and $repo/.sanitizer)." >&2
    echo "run_sanitizers: install the CUDA toolkit's compute-sanitizer, or" \
         "'pip install --target $repo/.sanitizer nvidia-cuda-sanitizer-api==13.0.*', or set COMPUTE_SANITIZER." >&2
    exit 2
fi
echo "run_sanitizers: using $san ($("$san" --version 2>/dev/null | grep -i version | head -n 1))"

if ! "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "run_sanitizers: no CUDA GPU visible to $py (torch.cuda.is_available() is False)" >&2
    exit 2
fi

tools="${SANITIZER_TOOLS:-memcheck racecheck initcheck synccheck}"
read -r -a extra <<< "${SANITIZER_EXTRA_ARGS:-}"
read -r -a sel_args <<< "${SELECTION_ARGS:-}"
export CUDA_MODULE_LOADING="${CUDA_MODULE_LOADING:-LAZY}"   # instrument only the kernels that run
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"

summary=()
status=0
for tool in $tools; do
    tool_args=()
    env_args=()
    profile=full
    case "$tool" in
        memcheck)  tool_args=(--leak-check no --padding 256); env_args=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
        initcheck) env_args=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
        racecheck) tool_args=(--racecheck-report all); profile=race ;;
        synccheck) ;;
        *) echo "run_sanitizers: unknown tool $tool" >&2; status=1; continue ;;
    esac
    log="$log_dir/$tool.log"
    out="$log_dir/$tool.out"
    rm -f "$log" "$out"
    echo "run_sanitizers: $tool (profile $profile) ..."
    start=$(date +%s)
    env "${env_args[@]}" "$san" --tool "$tool" --error-exitcode 1 --log-file "$log" --print-limit 200 \
        "${tool_args[@]}" "${extra[@]}" \
        "$py" "$here/sanitizer_selection.py" --profile "$profile" "${sel_args[@]}" > "$out" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    # "========= ERROR SUMMARY: N errors" (racecheck also prints "RACECHECK SUMMARY: N hazards ...")
    errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' "$log" 2>/dev/null | tail -n 1 | grep -Eo '[0-9]+')"
    app="$(grep -E '^sanitizer_selection' "$out" 2>/dev/null | tail -n 1 | sed -E 's/^sanitizer_selection \([a-z]+\): //')"
    [[ -z "$app" ]] && app="workload did not finish (see $out)"
    hazards=""
    if [[ "$tool" == racecheck ]]; then
        hazards="$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazard[s]? displayed \([0-9]+ error[s]?, [0-9]+ warning[s]?\)' "$log" \
                   2>/dev/null | tail -n 1)"
        # this compute-sanitizer's racecheck prints no ERROR SUMMARY line: count its hazard errors
        if [[ -z "$errors" && -n "$hazards" ]]; then
            errors="$(grep -Eo '\([0-9]+ error' <<< "$hazards" | grep -Eo '[0-9]+')"
        fi
        [[ -n "$hazards" ]] && hazards="; $hazards"
    fi
    line="$tool: ${errors:-?} errors  (exit $rc, ${secs} s, $app$hazards; log $log)"
    if [[ $rc -ne 0 || "${errors:-x}" != "0" ]]; then
        status=1
    fi
    echo "$line"
    summary+=("$line")
done

echo
echo "compute-sanitizer summary ($san):"
for line in "${summary[@]}"; do
    echo "  $line"
done
exit $status
