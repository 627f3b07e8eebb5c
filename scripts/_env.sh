# Shared set-up for scripts/test.sh, scripts/main.sh and .ci/run. Source it (bash), don't run it.
#
#   fwa_ensure_deps [--optional PKG...]  install what a fresh machine lacks: torch==$FWA_TORCH_VERSION
#                                        (only if torch is missing or another version; the default
#                                        PyPI wheel is the CUDA 13.0 build), pytest, numpy, ninja,
#                                        setuptools, wheel; optional packages are tried, never fatal
#   fwa_ensure_test_deps                 install the test-only dependencies, timm and transformers
#                                        at the versions the GPU machine has ($FWA_TEST_DEPS), when
#                                        missing or another version (torch stays pinned); never fatal
#                                        (tests that need them skip without them)
#   fwa_has_gpu                          true if torch sees a CUDA GPU
#   fwa_build                            pip install --no-build-isolation --no-deps -e . (every .cu)
#   fwa_importable [cuda]                true if flash_window_attn imports (with CUDA kernels)
#
# $PYTHON picks the interpreter (default: python, else python3).

FWA_TORCH_VERSION="${FWA_TORCH_VERSION:-2.11.0}"
if [ -z "${PYTHON:-}" ]; then
  if command -v python >/dev/null 2>&1; then PYTHON=python; else PYTHON=python3; fi
fi
export PYTHON
# Debian/Ubuntu system Pythons refuse pip installs without this; a CI container is ours to change.
export PIP_BREAK_SYSTEM_PACKAGES="${PIP_BREAK_SYSTEM_PACKAGES:-1}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

fwa_log() { echo "[flash_window_attn] $*" >&2; }

fwa_pip() { "$PYTHON" -m pip install --no-input --progress-bar off "$@"; }

fwa_ensure_deps() {
  local optional=()
  if [ "${1:-}" = "--optional" ]; then shift; optional=("$@"); fi

  local have
  have="$("$PYTHON" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)"
  if [ "$have" != "$FWA_TORCH_VERSION" ]; then
    fwa_log "installing torch==$FWA_TORCH_VERSION (found: ${have:-none})"
    fwa_pip "torch==$FWA_TORCH_VERSION"
  fi

  local missing=() mod
  for mod in pytest numpy setuptools wheel; do
    "$PYTHON" -c "import $mod" >/dev/null 2>&1 || missing+=("$mod")
  done
  if ! command -v ninja >/dev/null 2>&1 && ! "$PYTHON" -c "import ninja" >/dev/null 2>&1; then
    missing+=(ninja)
  fi
  if [ "${#missing[@]}" -gt 0 ]; then
    fwa_log "installing ${missing[*]}"
    fwa_pip "${missing[@]}"
  fi
  # pip's ninja puts its binary next to the module; torch's build looks for it on PATH.
  if ! command -v ninja >/dev/null 2>&1; then
    local ninja_dir
    ninja_dir="$("$PYTHON" -c 'import ninja; print(ninja.BIN_DIR)' 2>/dev/null || true)"
    if [ -n "$ninja_dir" ]; then export PATH="$ninja_dir:$PATH"; fi
  fi

  for mod in "${optional[@]}"; do
    if ! "$PYTHON" -c "import $mod" >/dev/null 2>&1; then
      fwa_log "installing optional $mod"
      # short timeout: a machine without internet access should not stall on an optional package
      fwa_pip --timeout 15 --retries 1 "$mod" || fwa_log "could not install $mod (continuing without it)"
    fi
  done
}

# Test-only dependencies, pinned: tests/test_modules.py and tests/test_swap.py compare the drop-in
# modules against these exact versions (pytest.importorskip skips them where they are missing).
FWA_TEST_DEPS=("timm==1.0.29" "transformers==5.17.0")

fwa_ensure_test_deps() {
  local want=() spec
  for spec in "${FWA_TEST_DEPS[@]}"; do
    local mod="${spec%%==*}" ver="${spec#*==}"
    if [ "$("$PYTHON" -c "import $mod; print($mod.__version__)" 2>/dev/null || true)" != "$ver" ]; then
      want+=("$spec")
    fi
  done
  if [ "${#want[@]}" -gt 0 ]; then
    fwa_log "installing test dependencies ${want[*]}"
    # torch is named too, pinned: otherwise pip may upgrade it (timm needs torchvision, whose newest
    # release needs a newer torch) and the extension, built against torch $FWA_TORCH_VERSION, breaks.
    fwa_pip "${want[@]}" "torch==$FWA_TORCH_VERSION" \
      || fwa_log "could not install ${want[*]} (their tests will be skipped)"
  fi
}

fwa_has_gpu() {
  "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1
}

fwa_build() {
  if [ -z "${TORCH_CUDA_ARCH_LIST:-}" ] && ! fwa_has_gpu; then
    # no GPU to detect the arch from: build every kernel for A100 (sm_80) and H100 (sm_90a)
    export TORCH_CUDA_ARCH_LIST="8.0;9.0a"
  fi
  export MAX_JOBS="${MAX_JOBS:-$(nproc)}"
  fwa_log "building (TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-auto}, MAX_JOBS=$MAX_JOBS)"
  "$PYTHON" -m pip install --no-input --no-build-isolation --no-deps -e .
}

fwa_importable() {
  if [ "${1:-}" = "cuda" ]; then
    "$PYTHON" -c 'import sys, torch, flash_window_attn
sys.exit(0 if torch._C._dispatch_has_kernel_for_dispatch_key("flash_window_attn::window_attention_fwd", "CUDA") else 1)' \
      >/dev/null 2>&1
  else
    "$PYTHON" -c 'import flash_window_attn' >/dev/null 2>&1
  fi
}
