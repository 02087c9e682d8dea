"""The command line and the GPU tier run where only torch, numpy and pandas are installed.

A GPU machine may have a preinstalled torch and no network, so no streamlit, plotly, SQLAlchemy or
hypothesis. Each test runs Python in a subprocess whose import system refuses those packages (as if
they were not installed) and checks that ``python -m specviz bench``, the modules the GPU tier uses
and the collection of the GPU tier still work there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from specviz.engine.models.gpt import GPT, GPTConfig

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("streamlit", "plotly", "sqlalchemy", "hypothesis")
#: what `python -m specviz bench|train|card` and the gpu tier may import: the CLI and every module of the
#: layers below the data layer (pyproject.toml's import-linter contracts state the same rule statically)
CLI_PACKAGES = ("specviz.cli", "specviz.base", "specviz.core", "specviz.engine")

#: prepended to every child's code: a meta-path finder that makes importing a BLOCKED package fail
BLOCKER = f"""
import sys
BLOCKED = {BLOCKED!r}
class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by tests/cli/test_cli_imports.py)", name=name)
        return None
sys.meta_path.insert(0, _NotInstalled())
"""

#: the child runs ``python -m specviz ARGS`` after the blocker
CLI = BLOCKER + "import runpy; runpy.run_module('specviz', run_name='__main__', alter_sys=True)\n"


def python(code: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def gpu_tier_files() -> list[str]:
    """The test files that scripts/gpu-check runs (``--list``)."""
    done = subprocess.run(["bash", "scripts/gpu-check", "--list"], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.slow
def test_the_blocker_blocks():
    done = python(BLOCKER + "import specviz.data.store")
    assert done.returncode == 1 and "No module named 'sqlalchemy' (blocked" in done.stderr


@pytest.mark.slow
def test_cli_modules_and_help_import_no_ui_or_database_stack():
    code = BLOCKER + "import importlib, pkgutil\nimportlib.import_module('specviz.__main__')\n"
    code += f"for name in {CLI_PACKAGES!r}:\n    package = importlib.import_module(name)\n"
    code += "    for i in pkgutil.walk_packages(package.__path__, name + '.'): importlib.import_module(i.name)\n"
    code += "assert 'specviz.engine.models.hf' in sys.modules and 'specviz.core.theory' in sys.modules\n"
    code += "assert 'specviz.cli.predict' in sys.modules\n"
    code += "print(sorted(m for m in sys.modules if m.partition('.')[0] in BLOCKED))\n"
    done = python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    done = python(CLI, "bench", "--help")
    assert done.returncode == 0, done.stderr
    assert "--dtype {auto,float32,float16,bfloat16}" in done.stdout and "--device" in done.stdout
    for command in ("train", "card"):
        done = python(CLI, command, "--help")
        assert done.returncode == 0 and "--out" in done.stdout, done.stderr


def test_every_folder_of_specviz_is_a_layer_of_the_import_contracts():
    """A new folder under specviz/ must join pyproject.toml's layers contract, or lint-imports checks nothing of it."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c["type"] == "layers")
    named = {name.strip() for layer in layers for name in layer.split("|")}
    folders = {f"specviz.{p.name}" for p in (ROOT / "specviz").iterdir() if (p / "__init__.py").exists()}
    assert folders == named, (
        f"folders {sorted(folders - named)} are in no layer; layers {sorted(named - folders)} are no folder"
    )
    assert {p.name for p in (ROOT / "specviz").glob("*.py")} == {"__init__.py", "__main__.py"}, (
        "a module outside the layers"
    )


@pytest.mark.slow
def test_bench_runs_without_ui_or_database_stack(tmp_path):
    torch.manual_seed(0)
    GPT(GPTConfig(1, 2, 32, block_size=128)).save(tmp_path / "target")
    GPT(GPTConfig(1, 2, 16, block_size=128)).save(tmp_path / "draft")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("def f(x):\n    ")
    out = tmp_path / "out.csv"
    argv = ["--pair", str(tmp_path), "--k", "1,2", "--temperature", "0", "--new-tokens", "6", "--repeats", "1"]
    done = python(CLI, "bench", *argv, "--prompts", str(prompts), "--device", "cpu", "--out", str(out))
    assert done.returncode == 0, done.stderr
    df = pd.read_csv(out)
    assert df.k.tolist() == [1, 2] and df.greedy_exact.astype(bool).all()


@pytest.mark.slow
def test_gpu_tier_collects_without_ui_or_database_stack():
    files = gpu_tier_files()
    assert "tests/cli/test_bench_cli.py" in files and "tests/cli/test_cli_imports.py" not in files
    code = BLOCKER + "import pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
    # where hypothesis is not installed, neither is its pytest plugin (which imports it at the end)
    plugins = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    done = python(code, "-m", "gpu", *plugins, "-q", "-rs", *files, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    selected = re.search(r"(\d+) (passed|skipped)", done.stdout)
    assert selected and int(selected.group(1)) >= 2, done.stdout[-3000:]


@pytest.mark.slow
def test_round_costs_runs_without_ui_or_database_stack(tmp_path):
    """scripts/gpu-check runs benchmarks/round_costs.py on the GPU machine, where only torch may be installed."""
    torch.manual_seed(0)
    GPT(GPTConfig(1, 2, 32, block_size=256)).save(tmp_path / "target")
    GPT(GPTConfig(1, 2, 16, block_size=256)).save(tmp_path / "draft")
    code = BLOCKER + "import runpy, sys; sys.path.insert(0, 'benchmarks')\n"
    code += "runpy.run_path('benchmarks/round_costs.py', run_name='__main__')\n"
    argv = ["--pair", str(tmp_path), "--ks", "1", "--temperatures", "0", "--prompts", "1", "--new-tokens", "8"]
    done = python(code, *argv)
    assert "measured / predicted speedup, every cell" in done.stdout, done.stderr
    assert "blocked by" not in done.stderr and "Traceback" not in done.stderr
