"""AIPerf's profile exports as tune points: the run library's AIPerf reader gives K and the shares, AIPerf's
means give TPOT, TTFT and tokens/s, its command line the load; what a file lacks is named with the file."""

from __future__ import annotations

import json

import pytest

from specviz.app import tune_aiperf
from specviz.base.i18n import Message
from specviz.base.paths import ROOT
from specviz.core import tuning

FIXTURE = ROOT / "tests" / "fixtures" / "formats" / "aiperf-profile-export.json"
SPEC_KEYS = [
    "pooled_spec_decode_acceptance_histogram", "total_spec_decode_steps", "total_accepted_draft_tokens",
    "total_draft_tokens", "spec_decode_overall_draft_acceptance_rate",
]  # fmt: skip


def export(**change) -> dict:
    obj = json.loads(FIXTURE.read_text())
    for key, value in change.items():
        if value is None:
            obj.pop(key, None)
        else:
            obj[key] = value
    return obj


def as_bytes(obj: dict) -> bytes:
    return json.dumps(obj).encode()


def test_a_speculative_export_is_a_point_at_its_own_k_with_its_shares():
    """vLLM's totals in the fixture: 23,211 drafts over 7,737 steps is K = 3; 11,399 accepted."""
    p = tune_aiperf.aiperf_point(FIXTURE.read_bytes(), "run.json", 0)
    obj = json.loads(FIXTURE.read_text())
    hist = {int(j): n for j, n in obj["pooled_spec_decode_acceptance_histogram"].items()}
    steps = obj["total_spec_decode_steps"]["avg"]
    assert (p["k"], p["concurrency"], p["server_k"]) == (3, 8, 3)
    assert p["shares"] == pytest.approx([sum(n for j, n in hist.items() if j >= i) / steps for i in (1, 2, 3)])
    assert p["mean_accepted"] == pytest.approx(1 + 11399 / 7737)
    assert float(tuning.mean_tokens(p["shares"], 3)) == pytest.approx(1 + 11399 / 7737)  # the shares sum to it
    assert p["tpot_s"] == pytest.approx(obj["inter_token_latency"]["avg"] / 1e3)
    assert p["ttft_s"] == pytest.approx(obj["time_to_first_token"]["avg"] / 1e3)
    assert p["tokens_per_s"] == obj["output_token_throughput"]["avg"] and p["requests"] == 64


def test_an_export_without_speculative_totals_is_k_0_only_when_said():
    plain = as_bytes(export(**dict.fromkeys(SPEC_KEYS)))
    p = tune_aiperf.aiperf_point(plain, "plain.json", 0)
    assert (p["k"], p["shares"], p["server_k"]) == (0, [], None)
    with pytest.raises(Message, match="plain.json: no speculative totals"):
        tune_aiperf.aiperf_point(plain, "plain.json", 3)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"hello": 1}', "x.json is not an AIPerf profile export"),
        (
            as_bytes(export(run_info={"cli_command": "aiperf profile --request-rate 4"})),
            "x.json: run_info.cli_command names no --concurrency",
        ),
        (as_bytes(export(inter_token_latency=None)), "x.json: needs inter_token_latency"),
        (b"x" * (20_000_001), "x.json: 20,000,001 bytes; at most 20,000,000 are read"),
    ],
)
def test_what_a_file_lacks_is_named_with_the_file(data, said):
    with pytest.raises(Message, match=said.replace("(", r"\(").replace(")", r"\)")):
        tune_aiperf.aiperf_point(data, "x.json", 0)


def test_two_exports_of_the_same_k_and_load_are_refused_and_a_sweep_is_fitted():
    one = FIXTURE.read_bytes()
    with pytest.raises(Message, match="a.json and b.json both measure K = 3 at 8 in flight; keep one"):
        tune_aiperf.aiperf_points([("a.json", one), ("b.json", one)], 0)
    plain = export(**dict.fromkeys(SPEC_KEYS))
    plain["inter_token_latency"] = {"unit": "ms", "avg": 5.2}
    points = tune_aiperf.aiperf_points([("k3.json", one), ("k0.json", as_bytes(plain))], 0)
    a = tuning.analyse(points, tuning.Profile(0.5, 0.3, "an earlier tune"))
    assert [c.concurrency for c in a.choices] == [8]
    assert a.fits[0].t0_s == pytest.approx(5.2e-3) and a.fits[0].how == "o fitted, r from the profile"
