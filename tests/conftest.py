"""Shared pytest fixtures."""

import pytest
import torch


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models: intra-op threads only add synchronisation (10× slower on a busy 2-core CPU)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
