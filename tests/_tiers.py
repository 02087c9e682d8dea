"""How much the property-based tests explore: everything in the full run (CI, the README command),
a quarter in the quick developer tier (``-m "not slow ..."``), which ``conftest.pytest_configure`` detects."""

QUICK = False  # True when the run deselects slow tests


def examples(n: int) -> int:
    """Hypothesis ``max_examples`` for a test that explores ``n`` examples in the full run."""
    return max(10, n // 4) if QUICK else n


def first_quick(values: list) -> list:
    """``parametrize`` values: the first runs in every tier, the others are marked slow (full run and CI).

    For statistical checks repeated over several cases: the quick tier keeps one case of each check.
    """
    return _slow_unless(values, [i == 0 for i in range(len(values))])


def quick_where(values: list, keep) -> list:
    """``parametrize`` values: those with ``keep(value)`` true run in every tier, the rest are marked slow."""
    return _slow_unless(values, [bool(keep(v)) for v in values])


def _slow_unless(values: list, quick: list[bool]) -> list:
    import pytest

    return [
        v if q else pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=pytest.mark.slow)
        for v, q in zip(values, quick, strict=True)
    ]
