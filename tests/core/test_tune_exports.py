"""A tuned K schedule as SGLang's adaptive config, read back by SGLang's own code.

SGLang 0.5.23 ships wheels only, and its modules import its CUDA stack, so the adaptive tier code is run,
not imported: from the 0.5.23 wheel on PyPI (checked against its sha256, cached outside the work tree),
``DEFAULT_ADAPTIVE_CONFIG``, ``_load_adaptive_config``, ``resolve_candidate_steps_from_config``,
``AdaptiveStepSlot`` and ``AdaptiveSpeculativeParams`` of sglang/srt/speculative/adaptive_spec_params.py
are taken out of the module by their syntax tree and executed with a stand-in for SGLang's logging helper.
The flags' fields are read from sglang/srt/arg_groups/fields/spec.py of the same wheel. Without the network
the test skips, saying so; CI fetches it.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import io
import json
import logging
import math
import os
import shlex
import zipfile
from functools import cached_property
from pathlib import Path

import httpx
import pytest

from specviz.base.i18n import Message
from specviz.core import configs, tuning

WHEEL = (
    "https://files.pythonhosted.org/packages/57/dd/0206d00b2ea5b163bbdd216e91cc4f23ea90fde8620db0a6272d4236b68e/"
    "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl"
)
WHEEL_SHA256 = "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937"
MEMBERS = {
    "adaptive_spec_params.py": "sglang/srt/speculative/adaptive_spec_params.py",
    "spec.py": "sglang/srt/arg_groups/fields/spec.py",
}
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "specviz" / "sglang-0.5.23"
TAKEN = {
    "DEFAULT_ADAPTIVE_CONFIG",
    "_load_adaptive_config",
    "resolve_candidate_steps_from_config",
    "AdaptiveStepSlot",
    "AdaptiveSpeculativeParams",
}
SCHEDULES = [[(1, 5), (4, 3), (8, 0)], [(1, 3)], [(1, 0), (2, 2)], [(1, 6), (2, 4), (16, 1), (64, 0)]]


def _wheel_members() -> dict[str, Path] | None:
    paths = {name: CACHE / name for name in MEMBERS}
    if not all(p.is_file() for p in paths.values()):
        try:
            body = httpx.get(WHEEL, timeout=300.0, follow_redirects=True).raise_for_status().content
        except httpx.HTTPError:
            return None
        if hashlib.sha256(body).hexdigest() != WHEEL_SHA256:
            raise AssertionError("the SGLang 0.5.23 wheel does not match its sha256")
        CACHE.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(io.BytesIO(body)) as z:
            for name, member in MEMBERS.items():
                paths[name].write_bytes(z.read(member))
    return paths


@pytest.fixture(scope="module")
def sglang_adaptive():
    """The five names of SGLang's adaptive module, and its spec fields' source."""
    paths = _wheel_members()
    if paths is None:
        pytest.skip("SGLang 0.5.23's wheel could not be fetched from PyPI (no network)")
    tree = ast.parse(paths["adaptive_spec_params.py"].read_text())

    def taken(node) -> bool:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            return node.name in TAKEN
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        return any(getattr(t, "id", None) in TAKEN for t in targets)

    module = ast.Module(body=[n for n in tree.body if taken(n)], type_ignores=[])
    ns = {
        "json": json,
        "math": math,
        "bisect": bisect,
        "cached_property": cached_property,
        "logger": logging.getLogger("sglang-adaptive"),
        "log_info_on_rank0": lambda logger, msg: None,
    }
    exec(compile(module, "adaptive_spec_params.py (SGLang 0.5.23)", "exec"), ns)
    return ns, paths["spec.py"].read_text()


@pytest.mark.slow
@pytest.mark.parametrize("tiers", SCHEDULES, ids=str)
def test_sglang_runs_the_adaptive_config_at_the_schedules_k_for_every_batch(sglang_adaptive, tiers, tmp_path):
    ns, _ = sglang_adaptive
    path = tmp_path / "adaptive.json"
    path.write_text(json.dumps(configs.sglang.adaptive_config(tiers)))
    flags = shlex.split(configs.sglang.adaptive_flags(tiers, algorithm="EAGLE3", config_path=str(path)))
    start = int(flags[flags.index("--speculative-num-steps") + 1])
    assert start in ns["resolve_candidate_steps_from_config"](str(path))  # speculative_hook.py's hard check
    assert flags[flags.index("--speculative-eagle-topk") + 1] == "1"
    params = ns["AdaptiveSpeculativeParams"](initial_steps=start, cfg_path=str(path))
    for batch in range(1, 129):
        assert params.get_steps_for_batch(batch) == tuning.k_at(tiers, batch), batch
    # one candidate per tier: however the acceptance moves, SGLang's EMA cannot leave the tier's K
    slot = params._route(1)
    for _ in range(40):
        slot.update([0] * 8)
    assert slot.current_steps == tiers[0][1]


@pytest.mark.slow
def test_the_flags_are_fields_of_sglangs_server_args(sglang_adaptive):
    _, spec = sglang_adaptive
    for flag in ("--speculative-adaptive", "--speculative-adaptive-config", "--speculative-num-steps"):
        assert f"    {flag[2:].replace('-', '_')}: A[" in spec, flag


def test_schedules_sglang_cannot_run_are_refused_in_words():
    with pytest.raises(Message, match="not expressible in SGLang: its adaptive draft length runs only with EAGLE"):
        configs.sglang.adaptive_flags([(1, 3)], algorithm="STANDALONE")
    with pytest.raises(Message, match="the first tier must start at batch 1"):
        configs.sglang.adaptive_config([(2, 3)])
    assert configs.sglang.adaptive_flags([(1, 0), (8, 0)], algorithm="EAGLE").startswith("#")
