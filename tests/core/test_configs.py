"""Every flag and key that specviz.core.configs writes, checked against each stack's own definitions, and
no other module writing one.

- vLLM 0.34.0, SGLang 0.5.10.post1, TensorRT-LLM (NVIDIA/TensorRT-LLM 0004396): fixtures of their sources'
  definitions in tests/fixtures/configs/ (each names the repo, path and version or commit it was read from).
- transformers: the installed ``GenerationConfig`` and ``generate``.
- llama.cpp b11434: the built ``llama-server --help``.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import shlex
import subprocess

import pandas as pd
import pytest
import yaml

from specviz.base.catalogues import KEYWORDS
from specviz.base.paths import ROOT
from specviz.core import configs, trees
from specviz.core import hardware as hw

FIXTURES = ROOT / "tests" / "fixtures" / "configs"
SCHEDULES = [
    pd.DataFrame({"batch": [1, 2, 3, 4, 5, 6], "k": [5, 5, 3, 3, 1, 0]}),
    pd.DataFrame({"batch": [1, 2, 4, 8], "k": [2, 2, 2, 2]}),
    pd.DataFrame({"batch": [1, 16, 64], "k": [4, 6, 0]}),  # a K above batch 1's: TensorRT-LLM refuses it
]


def _fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


# ------------------------------------------------------------------------------------------
# vLLM
# ------------------------------------------------------------------------------------------


def test_vllm_keys_and_methods_are_speculative_configs():
    vllm = _fixture("vllm-0.34.0.json")
    fields, methods = vllm["fields"], set(vllm["methods"])
    for schedule in SCHEDULES:
        for model in ("org/draft", None):
            config = configs.vllm.speculative_config(schedule, model=model)
            assert set(config) <= set(fields) and config["method"] in methods
            assert type(config["num_speculative_tokens"]) is int and config["num_speculative_tokens"] > 0  # gt=0
            ranges = config["num_speculative_tokens_per_batch_size"]  # list[tuple[int, int, int]]
            assert all(len(r) == 3 and all(type(v) is int for v in r) for r in ranges)
            json.dumps(config)
            for kind in configs.vllm.METHODS:
                head = configs.vllm.with_head(config, kind, "org/target")
                assert set(head) <= set(fields)
                assert ("model" in head) == (kind != "ngram" and (kind == "mtp" or model is not None))
    # every method we write is one of 0.34.0's; Medusa, which 0.34.0 has no method for, is refused, not written
    assert set(configs.vllm.METHODS.values()) <= methods
    assert "medusa" not in methods
    with pytest.raises(ValueError, match="not expressible in vLLM"):
        configs.vllm.with_head(configs.vllm.speculative_config(schedule), "medusa", "org/target")
    assert vllm["flag"] == "--speculative-config"


def test_vllm_ranges_merge_equal_neighbours_and_name_bad_input():
    assert configs.vllm.batch_ranges([1, 4, 16, 64], [5, 5, 3, 0]) == [[1, 15, 5], [16, 63, 3], [64, 64, 0]]
    with pytest.raises(ValueError, match="start at 1"):
        configs.vllm.batch_ranges([2, 4], [1, 1])


def test_the_hardware_views_vllm_config_is_the_configs_one():
    args = ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB", 0.75, 2048)
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    schedule = hw.k_schedule(*args, batches, tp_target=4)
    want = configs.vllm.speculative_config(schedule, model="meta-llama/Llama-3.2-1B-Instruct")
    assert hw.vllm_speculative_config(*args, batches, tp_target=4) == want
    assert set(want) <= set(_fixture("vllm-0.34.0.json")["fields"])


# ------------------------------------------------------------------------------------------
# SGLang
# ------------------------------------------------------------------------------------------


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Refused(message)


def _sglang_parser() -> argparse.ArgumentParser:
    """SGLang's --model-path and --speculative-* options, rebuilt from the fixture."""
    types = {"int": int, "float": float, "str": str, None: None}
    parser = _Parser(prog="sglang serve")
    for flag in _fixture("sglang-0.5.10.post1.json")["flags"].values():
        kwargs = {"dest": flag["dest"], "required": flag["required"]}
        if flag["action"] == "_StoreTrueAction":
            kwargs["action"] = "store_true"
        else:
            kwargs |= {"type": types[flag["type"]], "choices": flag["choices"], "nargs": flag["nargs"]}
        parser.add_argument(*flag["aliases"], **kwargs)
    return parser


def test_sglang_chain_and_tree_flags_parse_into_the_decision():
    parser = _sglang_parser()
    for k in range(1, 9):
        args = parser.parse_args(["--model-path", "t", *shlex.split(configs.sglang.chain_flags(k, draft="org/d"))])
        assert (args.speculative_algorithm, args.speculative_draft_model_path) == ("STANDALONE", "org/d")
        assert (args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens) == (
            k,
            1,
            k + 1,
        )
    assert configs.sglang.chain_flags(0).startswith("#")
    for kind in ("peagle", "dflash", "medusa"):  # no algorithm in 0.5.10.post1's choices: said, not approximated
        assert configs.sglang.algorithm(kind) is None
    for kind in ("eagle", "eagle3", "mtp"):
        algorithm = configs.sglang.algorithm(kind)
        flags = configs.sglang.tree_flags(3, 2, 7, algorithm=algorithm)
        args = parser.parse_args(["--model-path", "t", *shlex.split(flags)])
        assert args.speculative_algorithm == algorithm
        assert (args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens) == (3, 2, 8)
    # the rebuilt parser refuses what SGLang would
    for bad in (["--speculative-topk", "1"], ["--speculative-algorithm", "MEDUSA"], ["--speculative-num-steps", "x"]):
        with pytest.raises(_Refused):
            parser.parse_args(["--model-path", "t", *bad])


def test_the_tree_flags_are_the_best_top_k_trees():
    _, depth, topk = trees.best_topk([0.5, 0.2, 0.1], 8, 4)
    assert configs.sglang.tree_flags(depth, topk, 8) == (
        f"--speculative-num-steps {depth} --speculative-eagle-topk {topk} --speculative-num-draft-tokens 9"
    )


# ------------------------------------------------------------------------------------------
# TensorRT-LLM
# ------------------------------------------------------------------------------------------


def test_trtllm_keys_are_decoding_base_configs():
    trt = _fixture("trtllm-0004396.json")
    allowed = set(trt["fields"]) | set(trt["draft_target_fields"])
    for schedule in SCHEDULES[:2]:
        config = configs.trtllm.speculative_config(schedule, model="org/draft")
        parsed = yaml.safe_load(configs.trtllm.extra_options_yaml(config))[trt["key"]]
        assert parsed == config and set(parsed) <= allowed
        assert (
            trt["decoding_type_aliases"].get(parsed["decoding_type"], parsed["decoding_type"]) in trt["decoding_types"]
        )
        lengths = parsed["draft_len_schedule"]
        assert all(type(b) is int and b >= 1 and type(k) is int and k >= 0 for b, k in lengths.items())
        assert lengths[min(lengths)] == parsed["max_draft_len"] >= max(lengths.values())  # the smallest key's K
    assert configs.trtllm.speculative_config(SCHEDULES[0])["draft_len_schedule"] == {2: 5, 4: 3, 5: 1}  # ceiling keys
    with pytest.raises(ValueError, match="not expressible in TensorRT-LLM.*K = 6 at batch 16"):  # above K = 4
        configs.trtllm.speculative_config(SCHEDULES[2])
    assert configs.trtllm.speculative_config(SCHEDULES[0].assign(k=0)) is None
    assert configs.trtllm.extra_options_yaml(None).startswith("#")
    assert configs.trtllm.extra_options_yaml(configs.trtllm.speculative_config(SCHEDULES[1])).startswith("# add")


# ------------------------------------------------------------------------------------------
# transformers
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_transformers_fields_are_generation_configs():
    from transformers import GenerationConfig
    from transformers.generation.utils import GenerationMixin

    for k in (1, 4, 12):
        fields = configs.transformers.assistant_config(k)
        config = GenerationConfig(**fields)
        config.validate(strict=True)
        assert all(getattr(config, key) == value for key, value in fields.items())
        assert set(fields) <= set(GenerationConfig._get_default_generation_params())
    # the schedules are the ones GenerationConfig's own docstring lists for num_assistant_tokens_schedule
    doc = GenerationConfig.__doc__
    listed = doc[doc.index("num_assistant_tokens_schedule") : doc.index("assistant_confidence_threshold")]
    assert set(configs.transformers.SCHEDULES) == set(re.findall(r'`"(\w+)"`', listed))
    generate = inspect.signature(GenerationMixin.generate).parameters
    assert set(configs.transformers.generate_kwargs("draft")) <= set(generate)
    assert set(configs.transformers.generate_kwargs(ngram_k=3)) <= set(GenerationConfig().to_dict())
    for bad in ({"k": 0}, {"k": 2, "schedule": "linear"}):
        with pytest.raises(ValueError):
            configs.transformers.assistant_config(**bad)


# ------------------------------------------------------------------------------------------
# llama.cpp
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_help(llama_binary) -> str:
    done = subprocess.run([str(llama_binary), "--help"], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout + done.stderr


def _options(help_text: str) -> set[str]:
    """Every option the help lists: a line's first name and the names after its commas ("-np, --parallel N");
    the ones it says were removed ("--draft-max … the argument has been removed") left out."""
    lines = [line.strip() for line in help_text.splitlines() if "has been removed" not in line]
    return {name for line in lines for name in re.findall(r"(?:^|,\s*)(--?[a-zA-Z][\w-]*)", line)}


@pytest.mark.llamacpp
def test_llama_server_lists_every_flag_we_write(llama_help):
    options = _options(llama_help)
    assert "--spec-draft-n-max" in options and "--draft-max" not in options  # removed in b11434
    argvs = [configs.llamacpp.draft_flags(k, slots=s).split() for k in (1, 4) for s in (None, 8)]
    argvs += [configs.llamacpp.draft_flags(4, slots=8, kv=kv).split() for kv in ("unified", "slots")]
    argvs += [
        configs.llamacpp.server_spec_args("d.gguf", 3),
        configs.llamacpp.server_spec_args(None, 3, "ngram-simple"),
    ]
    argvs += [shlex.split(configs.llamacpp.command("t.gguf", "d.gguf", 4))[1:]]
    written = {a for argv in argvs for a in argv if re.fullmatch(r"--?[a-z][\w-]*", a)}
    assert written - options == set()
    assert str(configs.llamacpp.no_draft()).split()[-1] in options  # the note names a real flag
    spec_types = re.search(r"--spec-type \[?([\w,|{}-]+)", llama_help)
    assert spec_types and configs.llamacpp.DRAFT_TYPE in re.split(r"[,|{}\[\]]", spec_types.group(1))


def test_llamacpp_fixed_k_flags():
    assert configs.llamacpp.draft_flags(4) == "--spec-draft-n-max 4 --spec-draft-n-min 4 --spec-draft-p-min 0"
    assert configs.llamacpp.draft_flags(4, slots=8).startswith("-np 8 --kv-unified --spec-draft-n-max 4")
    assert configs.llamacpp.draft_flags(0, slots=8, kv="slots").startswith("-np 8 # speculation does not pay")
    assert configs.llamacpp.server_spec_args(None, 4) == []


# ------------------------------------------------------------------------------------------
# one writer
# ------------------------------------------------------------------------------------------

#: A stack's flag: llama-server's (--spec-*, the old --draft-max/-min/-p-min, -md, -np, --kv-unified),
#: SGLang's --speculative-*, TensorRT-LLM's --extra_llm_api_options. Our own CLI's --draft… are not.
FLAG = r"(?:--spec-[\w-]+|--speculative-[\w-]+|--draft-(?:max|min|p-min|p-split)|--model-draft|--kv-unified"
FLAG += r"|--extra_llm_api_options|-md)"
#: the keys of the stacks' JSON / YAML / GenerationConfig that only a config writer sets
KEYS = {"num_speculative_tokens_per_batch_size", "draft_len_schedule", "max_draft_len", "speculative_config"}
KEYS |= {"speculative_model", "num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold"}
KEYS |= {"prompt_lookup_num_tokens", "assistant_model"}
READERS = {"Alias"}  #: calls whose arguments are names a reader maps, not written
#: writers still outside configs, each waiting on a move (none)
PENDING: set[str] = set()


def _writes(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for every flag or config key ``tree`` writes: a string that starts with a flag, an
    f-string that gives a flag a value, a config key as a dict key, a keyword or an attribute set.
    Docstrings and messages (arguments of the catalogue's keywords: prose may name a flag) are skipped."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))  # a docstring
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in KEYWORDS or name in READERS:
                skip |= {id(n) for arg in node.args for n in ast.walk(arg)}
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.match(rf"\s*{FLAG}(?=\s|$)", node.value):
                out.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            if re.search(rf"(?:^|\s){FLAG}\s+\{{\}}", text):
                out.append((node.lineno, text))
            skip |= {id(v) for v in node.values}
        elif isinstance(node, ast.Dict):
            out += [(k.lineno, k.value) for k in node.keys if isinstance(k, ast.Constant) and k.value in KEYS]
        elif isinstance(node, ast.keyword) and node.arg in KEYS:
            out.append((node.value.lineno, node.arg))
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out += [(t.lineno, t.attr) for t in targets if isinstance(t, ast.Attribute) and t.attr in KEYS]
    return out


def test_the_rule_catches_writers_and_lets_prose_pass():
    caught = """
a = ["-md", str(draft), "--spec-type", kind]
b = f"--speculative-num-steps {depth} --speculative-eagle-topk {topk}"
c = f"llama-server -m {target} -md {draft}"
d = {"method": "eagle", "num_speculative_tokens_per_batch_size": ranges}
e = dict(num_assistant_tokens=4)
config.num_assistant_tokens = 4
"""
    assert {line for line, _ in _writes(ast.parse(caught))} == {2, 3, 4, 5, 6, 7}  # every line
    prose = '''
"""Fixes K with ``--spec-draft-n-max K``."""
a = ui.t("SGLang counts the root in --speculative-num-draft-tokens: it is the budget plus one.")
b = Message("a tree (--speculative-eagle-topk > 1) verifies more tokens")
c = "the draft length (--spec-draft-n-max) is not printed"
d = f"k {k} is more than --speculative-num-steps"
e = ap.add_argument("--draft-steps", type=int)
f = row["num_speculative_tokens"]
'''
    assert _writes(ast.parse(prose)) == []


@pytest.mark.slow
def test_no_module_outside_configs_writes_an_engine_flag():
    files = [ROOT / "app.py", *(p for d in ("specviz", "pages", "benchmarks") for p in (ROOT / d).rglob("*.py"))]
    found, pending = [], set()
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("specviz/core/configs/"):
            continue
        writes = _writes(ast.parse(path.read_text(), rel))
        if rel in PENDING:
            pending |= {rel} if writes else set()
            continue
        found += [f"{rel}:{line}: {what}" for line, what in writes]
    assert found == []
    assert pending == PENDING  # an entry that writes nothing any more leaves PENDING
