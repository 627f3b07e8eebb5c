#!/usr/bin/env bash
# The test command: install what is missing, build the extension with every CUDA kernel, run pytest.
# CUDA tests skip ("CUDA GPU not available") on a machine without a GPU.
#   bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/_env.sh

fwa_ensure_deps
fwa_ensure_test_deps
fwa_build
"$PYTHON" -m pytest -q -ra tests "$@"
