"""Shared pytest set-up: the `cuda` marker (skipped without a GPU) and per-test hygiene."""

import pytest
import torch


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cuda: needs a CUDA GPU; skipped with reason 'CUDA GPU not available' without one"
    )


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip_cuda = pytest.mark.skip(reason="CUDA GPU not available")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip_cuda)


@pytest.fixture(autouse=True)
def _fresh_seed():
    # Inputs come from seeded generators (flash_window_attn.testing.make_problem); seed the global
    # RNG too so that anything else a test draws is reproducible.
    torch.manual_seed(0)
    yield

