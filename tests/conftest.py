"""Shared pytest fixtures, the rule of the gpu tier, and the quick tier's smaller property tests."""

import _tiers
import pytest
import torch


def pytest_configure(config):
    """A run that deselects slow tests is the quick developer tier: property tests explore less (:mod:`_tiers`)."""
    _tiers.QUICK = "not slow" in (config.getoption("markexpr") or "")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` run only where torch sees a CUDA device; elsewhere they are skipped, saying why."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device (torch.cuda.is_available() is False): the gpu tier needs one")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models: intra-op threads only add synchronisation (10× slower on a busy 2-core CPU)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def db_url(tmp_path, monkeypatch) -> str:
    """A throw-away run library (SPECVIZ_DB_URL) and no deployment limits from the environment."""
    from specviz import store

    url = f"sqlite:///{tmp_path / 'library.sqlite'}"
    monkeypatch.setenv(store.ENV_URL, url)
    for name in ("SPECVIZ_HOSTED", "SPECVIZ_HF_ALLOWLIST", "SPECVIZ_MAX_WALL_S", "SPECVIZ_MAX_NEW_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    return url
