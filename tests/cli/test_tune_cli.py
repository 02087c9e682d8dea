"""``specviz tune``'s price: a typed price per GPU-hour wins, else the catalogue's dated one of ``--gpu``;
a GPU the catalogue prices nowhere is named with what to give instead."""

from __future__ import annotations

import argparse

import pytest

from specviz.cli.tune import _price
from specviz.core import serving


def args(**over) -> argparse.Namespace:
    return argparse.Namespace(**({"usd_per_hour": None, "gpu": None} | over))


def test_no_price_no_cost_and_a_typed_price_wins_over_the_catalogue(capsys):
    assert _price(args()) is None
    assert _price(args(usd_per_hour=1.25, gpu="H100-SXM5-80GB")) == 1.25
    usd, date, source = serving.gpu_price("H100-SXM5-80GB")
    assert _price(args(gpu="H100-SXM5-80GB")) == usd
    said = capsys.readouterr().out
    assert f"USD {usd:g} per GPU-hour for H100-SXM5-80GB" in said and date in said and source in said


def test_a_gpu_without_a_published_price_is_named():
    with pytest.raises(ValueError, match="--gpu 'H20-96GB': the catalogue has no published price for it"):
        _price(args(gpu="H20-96GB"))
