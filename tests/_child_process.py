"""Runs test code in a child interpreter; shared by tests/test_window_attention.py and
tests/test_local_attention.py; not a test file.

The kernels' testing switches (FWA_BWD_FORCE_TILED, FWA_BWD_Q_STRIP_MAX_NPAD, FWA_LOCAL_WGMMA, ...)
are environment variables read once per process, so a test of another kernel path runs its
checks in a fresh interpreter with the switch set.
"""

from __future__ import annotations

import os
import subprocess
import sys


def run_in_child(code: str, env: dict, what: str, timeout: int) -> str:
    """Runs ``code`` (Python source that prints "ok ..." when every check passed) with ``env``
    added to this process's environment; asserts a zero exit code and "ok" on stdout, and returns
    stdout."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                         env=dict(os.environ, **env))
    assert res.returncode == 0 and "ok" in res.stdout, (
        f"{what}: exit code {res.returncode}\nstdout:\n{res.stdout[-4000:]}\nstderr:\n{res.stderr[-4000:]}")
    return res.stdout
