"""Cost per million output tokens, and the catalogue's dated GPU prices."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.core import hardware, serving


def test_cost_per_million_tokens_by_hand():
    # 8 GPUs at $3.99 an hour serving 10,000 tokens/s: 31.92 $/h over 36 M tokens an hour
    assert serving.usd_per_million_tokens(3.99, 8, 10_000) == pytest.approx(8 * 3.99 / 36)
    costs = serving.usd_per_million_tokens(2.0, 1, np.array([0.0, 1000.0, 2000.0]))
    assert np.isinf(costs[0]) and costs[1] == pytest.approx(2 * costs[2])  # twice the rate, half the cost


@pytest.mark.parametrize(("price", "gpus"), [(0, 1), (-1, 1), (float("nan"), 1), (1.0, 0)])
def test_a_price_or_gpu_count_that_is_no_positive_number_is_refused(price, gpus):
    with pytest.raises(ValueError, match="must be a finite number > 0"):
        serving.usd_per_million_tokens(price, gpus, 100)


def test_every_catalogue_price_is_dated_and_sourced():
    _models, gpus = hardware.load_catalog()
    priced = 0
    for name in gpus.index:
        found = serving.gpu_price(name)
        if found is None:
            continue
        priced += 1
        value, date, source = found
        assert 0.1 < value < 100 and date.startswith("2026-") and "http" in source, (name, found)
    assert priced >= 12
    assert serving.gpu_price("H20-96GB") is None  # no published price was found: none is made up
