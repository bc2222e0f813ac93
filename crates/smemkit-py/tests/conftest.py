"""Every test runs on the CPU engine unless it says otherwise: CI has no GPU, and numpy (the
oracle) runs on the CPU too."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261124)


def pytest_configure(config):
    # A mark of numpy's own test modules, which test_numpy_suite.py imports.
    config.addinivalue_line("markers", "thread_unsafe: numpy's mark (its own tests)")
