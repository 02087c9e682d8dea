"""What the Serving view and the Drafting strategies page export for the engines, read back by the
engines' own parsers and code where they can run here.

- vLLM: ``build_dynamic_sd_schedule_lookup`` of vllm/v1/spec_decode/dynamic/utils.py from the vLLM
  0.34.0 release (its sdist on PyPI, checked against its sha256 and cached outside the work tree; the
  module imports nothing, so it loads alone without vLLM's CUDA stack). Without the network the test
  skips, saying so; CI fetches it.
- TensorRT-LLM: not executed, transcribed. Its PyPI "sdists" (1.2.1 and earlier) hold only PKG-INFO
  and pyproject.toml, its wheels live on NVIDIA's own index, and neither that index nor GitHub is
  reachable from our machines or CI, so its sources cannot be fetched, pinned and executed as the vLLM
  and SGLang sources are. Read, not run, from NVIDIA/TensorRT-LLM (Apache-2.0): the rules of
  ``DecodingBaseConfig`` (a ``StrictBaseModel``: unknown keys refused), its
  ``validate_draft_len_schedule_and_sort``, its model validator that refuses ``max_concurrency``
  together with ``draft_len_schedule`` and ``DraftTargetDecodingConfig``'s validator are transcribed in
  :func:`_trtllm_refusals` from tensorrt_llm/llmapi/llm_args.py at
  0004396720054fd8e205cbf616f21f0b57c6b412; the runtime lookup ``get_draft_len_for_batch_size`` (ceiling
  keys since PR #10860: a batch drafts the K of the smallest key at or above it, 0 above the largest) in
  :func:`_trtllm_draft_len` from tensorrt_llm/_torch/speculative/utils.py at
  011d0933dcb5e592f5fa2626beaf42a96324c578. The exported schedule must give the schedule's K at every
  batch, a schedule TensorRT-LLM cannot express must be refused with a Message, and broken variants of
  the export must be refused by the transcription.
- SGLang: its server_args.py imports SGLang's CUDA stack, so it is read, not imported: from the SGLang
  0.5.10.post1 sdist on PyPI (the newest release with an sdist; later ones ship wheels only; sha256-checked
  and cached like vLLM's), ``ServerArgs.add_cli_args``'s ``--model-path`` and ``--speculative-*``
  ``add_argument`` calls are rebuilt, with their literal keywords, into an ``argparse`` parser. The
  Serving view's flags must parse into K steps, top-1 and K + 1 draft tokens, with an algorithm among
  SGLang's choices and its ``SpeculativeAlgorithm`` enum (sglang/srt/speculative/spec_info.py), while
  a flag it does not have, a choice it does not list and a value of the wrong type are refused.
  The Drafting strategies page's tree flags (``configs.sglang.tree_flags``) must parse into the tree's depth,
  top-k and budget + 1, obey ``ServerArgs``' top-1 rule (num_draft_tokens = num_steps + 1), and fed to
  SGLang's own draft-tree code from the same sdist (``select_top_k_tokens`` of
  speculative/spec_utils.py, ``organize_draft_results`` of speculative/eagle_utils.py and
  ``fast_topk`` of utils/common.py, run on torch's CPU) with p as the draft's top-k probabilities,
  SGLang must keep the same drafts as our tree (by path probability). That code, not server_args.py,
  bounds the budget: it takes the top num_draft_tokens − 1 of topk + (num_steps − 1)·topk² candidates.
- llama.cpp: llama-server started with the exported flags (tests/servers/test_llamacpp.py's binary).
"""

from __future__ import annotations

import argparse
import ast
import bisect
import hashlib
import importlib.util
import io
import os
import shlex
import tarfile
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
import yaml

from specviz.base.i18n import Message
from specviz.core import configs, serving, trees

VLLM_SDIST = (
    "https://files.pythonhosted.org/packages/92/21/6e0b077dc4a0b28f5a8ce8bb352a38d7196650d681fd4faa87f8dc622eff/"
    "vllm-0.34.0.tar.gz"
)
VLLM_SHA256 = "fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113"
VLLM_MODULE = "vllm-0.34.0/vllm/v1/spec_decode/dynamic/utils.py"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "specviz" / "vllm-0.34.0"
SGLANG_SDIST = (
    "https://files.pythonhosted.org/packages/42/38/feb04f6478b90315606fcd62b798917e7fcee9f1d7d84b01cf477398045e/"
    "sglang-0.5.10.post1.tar.gz"
)
SGLANG_SHA256 = "01f7adfe7cde85b238fb0e1bae4b31d494e19d1471cf35ff3c5489a02f9d2263"
SGLANG_MODULES = {
    "server_args.py": "sglang-0.5.10.post1/sglang/srt/server_args.py",
    "spec_info.py": "sglang-0.5.10.post1/sglang/srt/speculative/spec_info.py",
    "spec_utils.py": "sglang-0.5.10.post1/sglang/srt/speculative/spec_utils.py",
    "eagle_utils.py": "sglang-0.5.10.post1/sglang/srt/speculative/eagle_utils.py",
    "common.py": "sglang-0.5.10.post1/sglang/srt/utils/common.py",
}
SGLANG_CACHE = CACHE.parent / "sglang-0.5.10.post1"
P, G = serving.Lengths.fixed(1024), serving.Lengths.fixed(256)


def _schedules():
    """Best K by batch for a few pairs whose K falls with the batch (down to 0 in the first): what every engine's
    schedule takes (a K that rises with the batch somewhere is refused by TensorRT-LLM, tested by hand below)."""
    cases = [
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "A100-SXM4-80GB", 1, 0.6),
        ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB", 4, 0.9),
        ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB", 4, 0.8),
    ]
    out = []
    for target, draft, gpu, tp, alpha in cases:
        grid = serving.cost_grid(target, draft, gpu, serving.chain_options(alpha, 6), P, G, tp=tp, stack="vllm")
        out.append(serving.k_by_batch(grid, G))
    return out


@pytest.fixture(scope="module")
def schedules():
    return _schedules()


def _from_sdist(url: str, sha256: str, members: dict[str, str], cache: Path) -> dict[str, Path] | None:
    """``members`` (cached name: path in the archive) of the sdist at ``url``, from ``cache`` or PyPI
    (checked against ``sha256``); None when neither has them."""
    paths = {name: cache / name for name in members}
    if not all(path.is_file() for path in paths.values()):
        try:
            body = httpx.get(url, timeout=120.0, follow_redirects=True).raise_for_status().content
        except httpx.HTTPError:
            return None
        if hashlib.sha256(body).hexdigest() != sha256:
            raise AssertionError(f"{url.rsplit('/', 1)[-1]} does not match its sha256")
        cache.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(body)) as tar:
            for name, member in members.items():
                paths[name].write_bytes(tar.extractfile(member).read())
    return paths


def _vllm_utils():
    """vLLM 0.34.0's dynamic-schedule module, from the cache or PyPI; None without either."""
    paths = _from_sdist(VLLM_SDIST, VLLM_SHA256, {"dynamic_utils.py": VLLM_MODULE}, CACHE)
    if paths is None:
        return None
    spec = importlib.util.spec_from_file_location("vllm_dynamic_utils", paths["dynamic_utils.py"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_vllm_parses_the_schedule_into_the_same_k_by_batch(schedules):
    utils = _vllm_utils()
    if utils is None:
        pytest.skip("vLLM 0.34.0's sdist could not be fetched from PyPI (no network)")
    for schedule in schedules:
        config = configs.vllm.speculative_config(schedule, model="draft")
        k_max = config["num_speculative_tokens"]
        dense = utils.build_dynamic_sd_schedule_lookup(
            config["num_speculative_tokens_per_batch_size"], int(schedule["batch"].max()), k_max
        )
        assert dense[1:] == list(np.minimum(schedule["k"], k_max))


# DecodingBaseConfig's fields (pydantic aliases included) and DraftTargetDecodingConfig's decoding_type, in
# tensorrt_llm/llmapi/llm_args.py at NVIDIA/TensorRT-LLM 0004396720054fd8e205cbf616f21f0b57c6b412 (Apache-2.0)
_TRTLLM_FIELDS = {"decoding_type", "max_draft_len", "max_total_draft_tokens", "speculative_model"}
_TRTLLM_FIELDS |= {"speculative_model_dir", "max_concurrency", "draft_len_schedule", "load_format"}
_TRTLLM_FIELDS |= {"acceptance_rate_window_size", "acceptance_rate_threshold", "use_rejection_sampling"}
_TRTLLM_FIELDS |= {"allow_advanced_sampling", "advanced_sampling_mode", "enable_penalty"}


def _trtllm_refusals(config: dict) -> list[str]:
    """What TensorRT-LLM's ``DraftTargetDecodingConfig(**config)`` would refuse, transcribed (not run:
    see the module docstring) from llm_args.py at 0004396, in its validators' order; [] when it validates.

    ``decoding_type`` is not checked: there the union of configs is discriminated by a ``Literal``
    (``"Draft_Target"`` for this class) and where ``"DraftTarget"``, our spelling and the docs', is
    mapped onto it is not in llm_args.py."""
    out = [f"extra field {k!r} not permitted (StrictBaseModel)" for k in config if k not in _TRTLLM_FIELDS]
    k_max, schedule = config.get("max_draft_len"), config.get("draft_len_schedule")
    if k_max is not None and (type(k_max) is not int or k_max < 0):  # Optional[NonNegativeInt]
        out.append(f"max_draft_len {k_max!r} is not a non-negative int")
        k_max = None  # not in info.data for the schedule's validator
    concurrency = config.get("max_concurrency")
    if concurrency is not None and (type(concurrency) is not int or concurrency <= 0):  # Optional[PositiveInt]
        out.append(f"max_concurrency {concurrency!r} is not a positive int")
    if schedule is not None:  # Optional[dict[int, int]], then validate_draft_len_schedule_and_sort
        if not isinstance(schedule, dict) or not all(type(b) is int and type(k) is int for b, k in schedule.items()):
            return [*out, f"draft_len_schedule {schedule!r} is not dict[int, int]"]
        for batch_size, draft_len in schedule.items():  # it raises at the first bad item
            if batch_size < 1:
                return [*out, f"draft_len_schedule: batch size threshold must be >= 1, got {batch_size}"]
            if draft_len < 0:
                return [*out, f"draft_len_schedule: draft length must be >= 0, got {draft_len}"]
        if not schedule:  # min(v.keys()) of an empty dict raises
            return [*out, "draft_len_schedule: min() of no batch sizes"]
        smallest = min(schedule)
        if k_max is not None and schedule[smallest] != k_max:
            return [*out, f"draft_len_schedule[{smallest}] must equal max_draft_len"]
        if k_max is not None:
            for batch_size, draft_len in schedule.items():
                if draft_len > k_max:
                    return [*out, f"draft length {draft_len} for batch_size={batch_size} > max_draft_len"]
    if out:
        return out  # field errors: the model validators do not run
    if concurrency is not None and schedule is not None:  # validate_max_concurrency_and_draft_len_schedule_…
        return ["max_concurrency and draft_len_schedule are mutually exclusive"]
    if k_max is None or k_max <= 0:  # DraftTargetDecodingConfig.validate_draft_target_config
        return ["max_draft_len must be > 0 for DraftTarget"]
    if config.get("speculative_model", config.get("speculative_model_dir")) is None:
        return ["speculative_model must be specified for DraftTarget"]
    return []


def _trtllm_draft_len(draft_len_schedule, batch_size, max_draft_len, min_draft_len=0):
    """``get_draft_len_for_batch_size``, transcribed from tensorrt_llm/_torch/speculative/utils.py at
    NVIDIA/TensorRT-LLM 011d0933dcb5e592f5fa2626beaf42a96324c578 (Apache-2.0; docstring and comments left out).
    ``draft_len_schedule`` is the validator's sorted dict."""
    if draft_len_schedule is None:
        return max_draft_len
    schedule_batch_sizes = list(draft_len_schedule.keys())
    idx = bisect.bisect_left(schedule_batch_sizes, batch_size)
    if idx < len(schedule_batch_sizes):
        return max(draft_len_schedule[schedule_batch_sizes[idx]], min_draft_len)
    return min_draft_len


def _k_at(schedule, batch: int) -> int:
    """The schedule's K at ``batch``: the K of the largest evaluated batch not above it."""
    evaluated = schedule.sort_values("batch")
    return int(evaluated["k"][evaluated["batch"] <= batch].iloc[-1])


def _assert_trtllm_drafts_the_schedule(schedule) -> dict:
    """``schedule``'s export, checked: TensorRT-LLM validates it and drafts the schedule's K at every batch
    1 … max(batch), and 0 above it."""
    config = configs.trtllm.speculative_config(schedule, model="org/draft")
    parsed = yaml.safe_load(configs.trtllm.extra_options_yaml(config))["speculative_config"]
    assert parsed == config and parsed["speculative_model"] == "org/draft"
    assert _trtllm_refusals(parsed) == []
    lengths, k_max = dict(sorted(parsed["draft_len_schedule"].items())), parsed["max_draft_len"]
    assert list(parsed["draft_len_schedule"]) == list(lengths)  # written in the order the validator sorts it into
    top = int(schedule["batch"].max())
    drafted = [_trtllm_draft_len(lengths, b, k_max) for b in range(1, top + 1)]
    assert drafted == [_k_at(schedule, b) for b in range(1, top + 1)]
    assert _trtllm_draft_len(lengths, top + 1, k_max) == 0
    return parsed


def test_trtllm_drafts_each_schedule_at_every_batch(schedules):
    for schedule in schedules:
        parsed = _assert_trtllm_drafts_the_schedule(schedule)
        # and the transcription refuses what llm_args.py refuses
        lengths, k_max = parsed["draft_len_schedule"], parsed["max_draft_len"]
        smallest, largest = min(lengths), max(lengths)
        for broken in (
            {**parsed, "draft_len_schedule": {**lengths, smallest: k_max - 1}},  # smallest key is not max_draft_len
            {**parsed, "draft_len_schedule": {**lengths, largest + 1: k_max + 1}},  # a K above max_draft_len
            {**parsed, "draft_len_schedule": {**lengths, largest + 1: -1}},  # a negative length
            {**parsed, "draft_len_schedule": {**lengths, 0: k_max}},  # a key below 1
            {**parsed, "draft_len_schedule": {str(b): k for b, k in lengths.items()}},  # not dict[int, int]
            {**parsed, "draft_len_schedule": {}},  # no key at all
            {**parsed, "max_concurrency": 8},  # with a schedule
            {**parsed, "max_draft_len": 0, "draft_len_schedule": {1: 0}},  # DraftTarget needs K > 0
            {**parsed, "num_speculative_tokens": k_max},  # vLLM's key
            {**parsed, "acceptance_window": 8},  # the fork's name, not upstream's
            {k: v for k, v in parsed.items() if k != "speculative_model"},  # DraftTarget needs a draft
        ):
            assert _trtllm_refusals(broken), broken


def test_trtllm_schedules_by_hand():
    import pandas as pd

    ceiling = _assert_trtllm_drafts_the_schedule(pd.DataFrame({"batch": [1, 2, 4, 8, 16], "k": [5, 5, 3, 3, 0]}))
    assert ceiling["max_draft_len"] == 5 and ceiling["draft_len_schedule"] == {3: 5, 15: 3}  # 16 and up: 0
    flat = _assert_trtllm_drafts_the_schedule(pd.DataFrame({"batch": [1, 2, 4, 8], "k": [2, 2, 2, 2]}))
    assert flat["max_draft_len"] == 2 and flat["draft_len_schedule"] == {8: 2}  # 9 and up: 0
    unsorted = _assert_trtllm_drafts_the_schedule(pd.DataFrame({"batch": [16, 1, 4], "k": [1, 4, 2]}))
    assert unsorted["draft_len_schedule"] == {3: 4, 15: 2, 16: 1}
    dip = _assert_trtllm_drafts_the_schedule(pd.DataFrame({"batch": [1, 2, 3], "k": [4, 1, 3]}))
    assert dip["draft_len_schedule"] == {1: 4, 2: 1, 3: 3}  # a K may rise again, up to batch 1's
    for batches, ks, said in (
        ([1, 16, 64], [4, 6, 0], "K = 6 at batch 16, above K = 4 at batch 1"),  # above max_draft_len
        ([1, 4, 16], [0, 2, 0], "K = 2 at batch 4, above K = 0 at batch 1"),  # off first, on later
    ):
        with pytest.raises(Message, match="not expressible in TensorRT-LLM") as refused:
            configs.trtllm.speculative_config(pd.DataFrame({"batch": batches, "k": ks}))
        assert said in str(refused.value)
    assert configs.trtllm.speculative_config(pd.DataFrame({"batch": [1, 8], "k": [0, 0]})) is None
    assert configs.trtllm.extra_options_yaml(None).startswith("#")


def test_sglang_and_llama_cpp_flags():
    assert configs.sglang.chain_flags(3, draft="d") == (
        "--speculative-algorithm STANDALONE --speculative-draft-model-path d --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
    )
    assert configs.sglang.chain_flags(0).startswith("#") and configs.llamacpp.draft_flags(0).startswith("#")
    assert configs.llamacpp.draft_flags(4) == "--spec-draft-n-max 4 --spec-draft-n-min 4 --spec-draft-p-min 0"
    assert configs.llamacpp.draft_flags(4, slots=8).startswith("-np 8 --kv-unified --spec-draft-n-max 4")
    assert configs.llamacpp.draft_flags(0, slots=8, kv="slots").startswith("-np 8 # speculation does not pay")


class _Refused(Exception):
    """What argparse would print before exiting with status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Refused(message)


class _Unresolved(Exception):
    """An ``add_argument`` keyword whose value the source does not state as a literal (a call, a ServerArgs field
    computed at run time): the keyword is dropped and reported, not guessed."""


_TYPES = {"int": int, "float": float, "str": str}
_KEPT = ("type", "choices", "action", "default", "nargs", "required", "dest", "const")


def _sglang_parser(source: str) -> tuple[argparse.ArgumentParser, dict[str, list[str]]]:
    """SGLang's ``--model-path`` and ``--speculative-*`` options, rebuilt from the ``add_argument`` calls
    of ``ServerArgs.add_cli_args`` in server_args.py's source, and the keywords dropped for each flag.

    A keyword is kept when it is a literal, ``int``/``float``/``str``, a module-level constant (lists
    such as ``[*QUANTIZATION_CHOICES, "unquant"]`` included) or a ``ServerArgs.<field>`` default that
    is one of these; any other (a function as ``type``, a ``default_factory``...) is dropped and
    returned, so a test can insist the ones it relies on were kept. ``help`` is never read. In
    0.5.10.post1 one is dropped: ``--speculative-ngram-capacity``'s default (``10 * 1000 * 1000``, an
    expression, not a literal); no flag we export relies on it.
    """
    tree = ast.parse(source)
    constants = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    server_args = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs")
    fields = {
        n.target.id: n.value
        for n in server_args.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None
    }
    add_cli_args = next(n for n in server_args.body if isinstance(n, ast.FunctionDef) and n.name == "add_cli_args")

    def value(node):
        if isinstance(node, ast.Name) and node.id in _TYPES:
            return _TYPES[node.id]
        if isinstance(node, ast.Name) and node.id in constants:
            return value(constants[node.id])
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ServerArgs":
            if node.attr in fields:
                return value(fields[node.attr])
            raise _Unresolved
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = []
            for elt in node.elts:
                items.extend(value(elt.value) if isinstance(elt, ast.Starred) else [value(elt)])
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
        try:
            return ast.literal_eval(node)
        except ValueError:
            raise _Unresolved from None

    parser, dropped = _Parser(prog="sglang serve"), {}
    for call in ast.walk(add_cli_args):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        if call.func.attr != "add_argument":
            continue
        flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not flags or not (flags[0].startswith("--speculative-") or flags[0] == "--model-path"):
            continue
        kwargs = {}
        for keyword in call.keywords:
            if keyword.arg not in _KEPT:
                continue
            try:
                kwargs[keyword.arg] = value(keyword.value)
            except _Unresolved:
                dropped.setdefault(flags[0], []).append(keyword.arg)
        parser.add_argument(*flags, **kwargs)
    return parser, dropped


def _enum_members(source: str, name: str) -> set[str]:
    cls = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == name)
    return {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}


@pytest.fixture(scope="module")
def sglang_sources():
    paths = _from_sdist(SGLANG_SDIST, SGLANG_SHA256, SGLANG_MODULES, SGLANG_CACHE)
    if paths is None:
        pytest.skip("SGLang 0.5.10.post1's sdist could not be fetched from PyPI (no network)")
    return paths


@pytest.mark.slow
def test_sglang_parser_takes_the_flags(schedules, sglang_sources):
    paths = sglang_sources
    parser, dropped = _sglang_parser(paths["server_args.py"].read_text())
    ours = ["--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps"]
    ours += ["--speculative-eagle-topk", "--speculative-num-draft-tokens", "--model-path"]
    assert not set(ours) & set(dropped), dropped  # the keywords our flags rely on were all read
    options = {flag: action for action in parser._actions for flag in action.option_strings}
    assert set(ours) <= set(options)
    algorithms = options["--speculative-algorithm"].choices
    # STANDALONE (a separate draft model) is both a CLI choice and a SpeculativeAlgorithm in this release
    assert "STANDALONE" in algorithms
    assert "STANDALONE" in _enum_members(paths["spec_info.py"].read_text(), "SpeculativeAlgorithm")

    ks = {int(k) for schedule in schedules for k in schedule["k"] if k > 0} | set(range(1, 9))
    for k in sorted(ks):
        argv = ["--model-path", "org/target", *shlex.split(configs.sglang.chain_flags(k, draft="org/draft"))]
        args = parser.parse_args(argv)
        assert args.speculative_algorithm == "STANDALONE" and args.speculative_algorithm in algorithms
        assert args.speculative_draft_model_path == "org/draft"
        assert args.speculative_num_steps == k and isinstance(args.speculative_num_steps, int)
        assert args.speculative_eagle_topk == 1
        # with top-1 SGLang resets num_draft_tokens to num_steps + 1 (ServerArgs._handle_speculative_decoding)
        assert args.speculative_num_draft_tokens == k + 1
    for algorithm in ("EAGLE", "EAGLE3"):
        args = parser.parse_args(
            ["--model-path", "t", *shlex.split(configs.sglang.chain_flags(2, algorithm=algorithm))]
        )
        assert args.speculative_algorithm == algorithm and args.speculative_draft_model_path is None

    # the parser refuses what SGLang would: a flag it lacks, an algorithm it lacks, a K that is no int
    good = ["--model-path", "t", *shlex.split(configs.sglang.chain_flags(3, draft="d"))]
    for bad in (
        [*good, "--num-speculative-tokens", "3"],  # vLLM's spelling
        [*good, "--speculative-topk", "1"],
        [*good[:-1], "4.5"],
        ["--model-path", "t", "--speculative-algorithm", "MEDUSA"],
        ["--model-path", "t", "--speculative-num-steps", "three"],
        good[2:],  # --model-path is required
    ):
        with pytest.raises(_Refused):
            parser.parse_args(bad)


def _functions(source: str, names: set[str]) -> list[ast.FunctionDef]:
    """The module-level functions ``names`` of ``source``, undecorated: the one decorator among them,
    ``select_top_k_tokens``' ``@torch.compile(dynamic=True, disable=_is_npu)``, only compiles it."""
    found = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {n.name for n in found} == names
    for node in found:
        node.decorator_list = []
    return found


def _sglang_draft_tree(paths: dict[str, Path]):
    """A function (p, num_steps, topk, num_draft_tokens) -> path probabilities of the drafts SGLang
    keeps: ``EAGLEWorker.draft_forward``'s loop (speculative/eagle_worker.py) around SGLang's own
    ``select_top_k_tokens``, ``organize_draft_results`` and ``fast_topk`` (the one it imports off CUDA),
    executed alone on CPU tensors, for one request whose draft gives every node's r-th child the
    probability p[r - 1] (0 past p)."""
    body = _functions(paths["common.py"].read_text(), {"fast_topk"})
    body += _functions(paths["spec_utils.py"].read_text(), {"select_top_k_tokens"})
    body += _functions(paths["eagle_utils.py"].read_text(), {"organize_draft_results"})
    namespace = {"torch": torch, "List": list}  # all that the three use (List only in annotations)
    exec(compile(ast.Module(body=body, type_ignores=[]), "sglang-0.5.10.post1", "exec"), namespace)

    def kept(p, num_steps: int, topk: int, num_draft_tokens: int) -> np.ndarray:
        child = torch.zeros(topk, dtype=torch.float64)
        child[: min(topk, len(p))] = torch.as_tensor(p[:topk], dtype=torch.float64)
        topk_p, topk_index = child[None], torch.arange(topk)[None]  # the draft's prefill: the root's top-k
        hidden, scores, lists = torch.zeros(1, 1), None, ([], [], [])
        for i in range(num_steps):
            _, hidden, scores, info = namespace["select_top_k_tokens"](i, topk_p, topk_index, hidden, scores, topk)
            for out, part in zip(lists, info, strict=True):
                out.append(part)
            topk_p, topk_index = child.repeat(topk, 1), torch.arange(topk).repeat(topk, 1)  # each node's top-k
        _, index, _ = namespace["organize_draft_results"](*lists, num_draft_tokens)
        return torch.cat(lists[0], dim=1).flatten(1)[0, index[0]].numpy()

    return kept


@pytest.mark.slow
def test_sglang_takes_the_tree_flags(sglang_sources):
    paths = sglang_sources
    parser, dropped = _sglang_parser(paths["server_args.py"].read_text())
    assert not {"--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens"} & set(dropped)
    # ServerArgs._handle_speculative_decoding: with top-1 SGLang resets num_draft_tokens to num_steps + 1
    assert "self.speculative_num_draft_tokens = self.speculative_num_steps + 1" in paths["server_args.py"].read_text()
    kept = _sglang_draft_tree(paths)
    EAGLE = ["--model-path", "t", "--speculative-algorithm", "EAGLE"]  # the tree flags leave these out

    cases = [
        (p, budget, max_depth)
        for p in ([0.5, 0.2, 0.1], trees.geometric_p(0.6, 4), [0.7, 0.1])
        for budget in (1, 3, 4, 8, 16)
        for max_depth in (1, 2, 4, 6)
    ]
    shapes = set()
    for p, budget, max_depth in cases:
        try:
            tree, depth, topk = trees.best_topk(p, budget, max_depth)
        except ValueError:  # no top-k tree of that depth holds the budget (the page warns)
            continue
        args = parser.parse_args([*EAGLE, *shlex.split(configs.sglang.tree_flags(depth, topk, budget))])
        steps, k, n = args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens
        assert (steps, k, n) == (depth, topk, budget + 1) and all(type(v) is int for v in (steps, k, n))
        assert tree.drafts == budget and tree.depth <= steps
        if k == 1:  # else SGLang would draft another chain than ours
            assert n == steps + 1
        # SGLang's own draft code keeps n − 1 of its topk + (steps − 1)·topk² candidates: ours
        ours = trees.path_probabilities(tree, p)[1:]
        assert np.allclose(np.sort(kept(p, steps, k, n)), np.sort(ours)), (p, budget, max_depth)
        shapes.add((k > 1, steps > 1))
    assert shapes == {(False, False), (False, True), (True, False), (True, True)}  # chains and trees

    # and it refuses a budget no top-k tree of that depth holds: 8 drafts > 2 + (2 − 1)·2²
    with pytest.raises(RuntimeError):
        kept([0.5, 0.2], 2, 2, 8 + 1)


@pytest.mark.slow
@pytest.mark.llamacpp
def test_llama_server_takes_the_flags(tmp_path, llama_binary, gguf_pair):
    from specviz.servers import llamacpp

    target, draft = gguf_pair
    for kv in serving.KV_LAYOUTS:
        flags = [
            "-md",
            str(draft),
            "--spec-type",
            "draft-simple",
            *configs.llamacpp.draft_flags(3, slots=2, kv=kv).split(),
        ]
        with llamacpp.serve(llama_binary, target, None, 3, log_dir=tmp_path, extra=flags, slots=2) as server:
            reply = llamacpp.complete(server.url, [65, 66, 67], 16)
            assert reply["timings"].get("draft_n", 0) > 0  # it drafted with the flags given
            props = httpx.get(server.url + "/props", timeout=10).json()
            assert props["total_slots"] == 2


@pytest.mark.slow
@pytest.mark.llamacpp
def test_llama_server_gives_the_slot_serving_predicts(tmp_path, llama_binary, gguf_pair):
    """serving.lru_free_slot against llama-server's own choice: requests one after another, each with a
    prompt no slot holds, on a fresh server of 4 slots (ties to the highest id, then release order)."""
    from specviz.servers import llamacpp

    target, _ = gguf_pair
    last_used, chosen, expected = np.full(4, -1.0), [], []
    with llamacpp.serve(llama_binary, target, None, 0, log_dir=tmp_path, slots=4) as server:
        for i in range(7):
            expected.append(serving.lru_free_slot(last_used, busy=()))
            prompt = [65 + i] * 8  # no common prefix with any slot's tokens: the least-recently-used rule decides
            chosen.append(llamacpp.complete(server.url, prompt, 4)["id_slot"])
            last_used[chosen[-1]] = i  # released when it ended
    assert chosen == expected == [3, 2, 1, 0, 3, 2, 1]
