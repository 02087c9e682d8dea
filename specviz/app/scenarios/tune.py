"""The Tune page's scenario: where the points come from (the shipped example, a llama-server started here,
a running server), the sweep's plan, the traffic mix, and the answer and exports computed from the points."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pandas as pd

from specviz.app import ui
from specviz.app.measured.scenarios import prior_param
from specviz.app.scenarios import hardware as hw_scenarios
from specviz.app.share import Param
from specviz.base import settings
from specviz.base.i18n import N_, Message
from specviz.base.paths import DATA
from specviz.core import configs, hardware, heads, published, serving, tuning
from specviz.servers import tune

PAGE = "tune"
SOURCES = ("example", "lengths", "local", "remote", "aiperf")
EXAMPLE = DATA / "tune" / "llamacpp-bundled"  #: benchmarks/tune_bench.py's sweep, committed with its date
EXAMPLES = {"example": EXAMPLE, "lengths": DATA / "tune" / "llamacpp-bundled-lengths"}  #: shipped tunes
ENDED = {"time": N_("its time limit"), "stop": N_("Stop was pressed")}  #: why a sweep ended early, as said
GPUS = tuple(hardware.load_catalog()[1].index)
MODELS = tuple(hardware.load_catalog()[0].index)
DRAFTS = tuple(d for d in hw_scenarios.DRAFTS if d != hardware.NGRAM)  #: a catalogue model or a published head
URL = "tune"  #: the page's URL path
ENV_DIR = "SPECVIZ_TUNE_DIR"  #: where the page keeps its tunes (default: ~/.local/share/specviz/tunes)
SPEC = (
    Param(
        "source",
        "example",
        "choice",
        choices=SOURCES,
        label=N_("Measurements"),
        labels=(
            N_("the example tune"),
            N_("the example over prompt lengths"),
            N_("start llama-server here"),
            N_("a running server"),
            N_("AIPerf exports"),
        ),
    ),
    Param("name", "my-tune", "text", hi=60, label=N_("Tune name")),
    Param("url", "", "text", hi=300, label=N_("Server URL")),
    Param("k", 4, "int", 0, 16, label=N_("The server's K")),
    Param("k_files", 0, "int", 0, 16, label=N_("K for exports that do not state it (0: no speculation)")),
    Param("ks", [0, 1, 2, 3, 4, 5, 6], "ints", 0, 16, label=N_("Draft lengths K (0: none)")),
    Param("conc", [1, 2, 4, 8], "ints", 1, 64, label=N_("Requests in flight")),
    Param("contexts", [0], "ints", 0, 131072, label=N_("Prompt lengths in tokens (0: the prompts as they are)")),
    Param("ctx", 0, "int", 0, 131072, label=N_("Prompt length the answer below is for")),
    Param("requests", 32, "int", 1, 2000, label=N_("Requests per point")),
    Param("tokens", 128, "int", 2, 2048, label=N_("Output tokens per request")),
    Param("minutes", 10, "int", 1, 240, label=N_("Time limit (min)")),
    Param("mix", "", "text", hi=300, label=N_("Traffic mix (load: share, …; empty: equal)")),
    Param("algorithm", "EAGLE3", "choice", choices=("EAGLE3", "EAGLE"), label=N_("SGLang algorithm")),
    Param("prior", "", "text", hi=60, label=N_("Compare with the predictions of an earlier tune (its name)")),
    Param("gpu", "H100-SXM5-80GB", "choice", choices=GPUS, label=N_("GPU the server runs on")),
    Param("gpus", 1, "int", 1, 64, label=N_("GPUs")),
    Param("price", 0.0, "float", 0.0, 1000.0, label=N_("GPU price, USD per GPU-hour (0: the catalogue's dated price)")),
    Param("tpot", 0.0, "float", 0.0, 10000.0, label=N_("TPOT limit (ms; 0: none)")),
    Param("target", "", "choice", choices=("", *MODELS), label=N_("Target model (for the memory it leaves)")),
    Param("draft", "", "choice", choices=("", *DRAFTS), label=N_("Draft model or head")),
    prior_param("published", N_("Compare the measured α with the published α of (method/domain)")),
)


@dataclass(frozen=True)
class Scenario:
    source: str
    name: str
    url: str
    k: int
    k_files: int
    ks: tuple[int, ...]
    conc: tuple[int, ...]
    contexts: tuple[int, ...]
    ctx: int
    requests: int
    tokens: int
    minutes: int
    mix: str
    algorithm: str
    prior: str = ""
    gpu: str = "H100-SXM5-80GB"
    gpus: int = 1
    price: float = 0.0  #: USD per GPU-hour (0: the catalogue's dated price of the GPU, where it has one)
    tpot: float = 0.0  #: TPOT limit in ms (0: none)
    target: str = ""  #: catalogue model the server runs ("": not given, no capacity)
    draft: str = ""
    published: str = "eagle3/chat"  #: the published prior (method/domain) the measured α is compared with


def scenario(view: dict) -> Scenario:
    return Scenario(
        view["source"],
        view["name"].strip(),
        view["url"].strip(),
        view["k"],
        view["k_files"],
        tuple(view["ks"]),
        tuple(view["conc"]),
        tuple(view["contexts"]),
        view["ctx"],
        view["requests"],
        view["tokens"],
        view["minutes"],
        view["mix"],
        view["algorithm"],
        view["prior"].strip().strip("\"'"),  # the placeholder shows "example" in quotes
        view["gpu"],
        view["gpus"],
        view["price"],
        view["tpot"],
        view["target"],
        view["draft"],
        view["published"],
    )


def tunes_dir() -> Path:
    """The folder that holds this deployment's tunes."""
    given = settings.value(ENV_DIR)
    return Path(given) if given else Path.home() / ".local" / "share" / "specviz" / "tunes"


def folder(s: Scenario) -> Path:
    """The scenario's tune folder: the shipped example, or its name under :func:`tunes_dir`."""
    if s.source in EXAMPLES:
        return EXAMPLES[s.source]
    name = s.name
    if not name or not all(ch.isalnum() or ch in "-_." for ch in name) or name.startswith("."):
        raise Message(
            "Tune name must be letters, digits, '-', '_' or '.', not starting with '.'; got {name!r}", name=name
        )
    return tunes_dir() / name


def prior_points(s: Scenario, context: int = 0) -> list[dict]:
    """The points of the earlier tune named in ``s.prior`` (a key of :data:`EXAMPLES`: a shipped one) at ``context`` where it
    measured it, else at its shortest; Message where it has none."""
    where = EXAMPLES.get(s.prior) or folder(Scenario(**{**vars(s), "source": "local", "name": s.prior}))
    points = tune.read_points(where)
    if not points:
        raise Message("no tune named {name!r} has points here", name=s.prior)
    lengths = tuning.contexts(points)
    return tuning.at_context(points, context if context in lengths else lengths[0])


def plan(s: Scenario, prompts_sha: str) -> tune.TunePlan:
    """The sweep the controls describe; Message naming a field out of range."""
    remote = s.source == "remote"
    return tune.TunePlan(
        "remote" if remote else "local",
        (s.k,) if remote else s.ks,
        s.conc,
        requests=s.requests,
        max_tokens=s.tokens,
        minutes=s.minutes,
        target=s.url if remote else "bundled",
        prompts_sha=prompts_sha,
        contexts=s.contexts,
    )


def parse_mix(text: str, loads) -> dict[int, float] | None:
    """``"1: 0.4, 8: 0.6"`` → {1: 0.4, 8: 0.6}; empty: None (equal). Message naming the part not understood."""
    if not text.strip():
        return None
    out: dict[int, float] = {}
    for part in text.split(","):
        load, sep, share = part.partition(":")
        try:
            c, w = int(load), float(share)
        except ValueError:
            raise Message(
                "Traffic mix: {part!r} is not 'load: share' (e.g. 1: 0.4, 8: 0.6)", part=part.strip()
            ) from None
        if not sep or c not in loads or not math.isfinite(w) or w < 0:
            raise Message(
                "Traffic mix: {part!r} must name a measured load ({loads}) and a share >= 0",
                part=part.strip(),
                loads=", ".join(map(str, loads)),
            )
        out[c] = w
    tuning.mix_weights(list(loads), out)  # refuses an all-zero mix
    return out


@ui.cached
def answer(points: tuple[tuple[tuple[str, object], ...], ...], carried: tuple | None = None) -> tuning.Answer:
    """The tune's answer from its points (hashable: each point's items); ``carried``: an earlier tune's points,
    whose o and r price the loads this one cannot fit alone (a remote server at one K)."""
    profile = answer(carried).profile if carried else None
    return tuning.analyse([_point(p) for p in points], profile)


def _point(items) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in items}


def frozen(points: list[dict]) -> tuple:
    """Points as :func:`answer` takes them."""
    return tuple(tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in p.items())) for p in points)


def price(s: Scenario) -> tuple[float, str, str] | None:
    """(USD per GPU-hour, its date, its source): the typed price (no date or source), else the catalogue's
    dated one for the GPU named; None where there is neither."""
    return (s.price, "", "") if s.price > 0 else serving.gpu_price(s.gpu)


def costs(s: Scenario, a: tuning.Answer, usd_per_hour: float) -> tuple[pd.DataFrame, pd.DataFrame, tuple]:
    """(every (K, load) priced, per load the best K within the TPOT limit each way, the cheapest setups)."""
    sla = s.tpot / 1e3 if s.tpot > 0 else None
    frame = tuning.priced(a.table, usd_per_hour, s.gpus)
    return frame, tuning.cost_by_load(frame, sla), tuning.cheapest(frame, sla)


def context_shown(s: Scenario, points: list[dict]) -> tuple[int, list[int]]:
    """(the context the answer is read at: the chosen one where measured, else the shortest; every context)."""
    measured = tuning.contexts(points)
    return (s.ctx if s.ctx in measured else measured[0]), measured


def capacity_context(points: list[dict]) -> int:
    """Tokens a sequence holds at the end: the server's mean prompt tokens (else the length asked) plus the
    mean output tokens of ``points``."""
    prompt = tuning.prompt_tokens(points)
    if not math.isfinite(prompt):
        prompt = float(max(tuning.context_of(p) for p in points))
    output = [p["output_tokens"] for p in points if isinstance(p.get("output_tokens"), int | float)]
    return round(prompt + (sum(output) / len(output) if output else 0.0))


def capacity(s: Scenario, context: int, k: int, batch: int) -> hardware.MemoryPlan:
    """:func:`hardware.memory_plan` of the named target and draft on ``s.gpus`` of the GPU (tensor parallel) at
    ``context`` tokens per sequence, K = ``k`` and ``batch`` sequences; Message where the target is not named."""
    if not s.target:
        raise Message("name the target model to see the memory it leaves")
    draft = s.draft or None
    return hardware.memory_plan(s.target, draft, s.gpu, batch, context, k if draft else 0, tp_target=s.gpus)


def schedule_frame(a: tuning.Answer) -> pd.DataFrame:
    """The best K by load as the engines' writers take it (columns batch, k)."""
    return pd.DataFrame({"batch": [c.concurrency for c in a.choices], "k": [c.k for c in a.choices]})


def exports(a: tuning.Answer, algorithm: str, static_k: int | None) -> dict[str, str]:
    """Each stack's text for the schedule, or a line saying why that stack cannot take it; llama.cpp, which
    takes one K for every load, gets ``static_k`` (the best single K for the traffic mix) when K varies."""
    sched = schedule_frame(a)
    ks = sorted(set(sched["k"]))
    if len(ks) == 1:
        out = {"llama.cpp": configs.llamacpp.draft_flags(ks[0])}
    else:
        why = ui.t("not expressible in llama.cpp: one K for every load (--spec-draft-n-max)")
        if static_k is None:
            out = {"llama.cpp": "# " + why}
        else:
            best = ui.t("the best single K for the traffic mix: K = {k}", k=static_k)
            out = {"llama.cpp": f"# {why}\n# {best}\n" + configs.llamacpp.draft_flags(static_k)}
    out["vLLM"] = _or_reason(lambda: configs.vllm.speculative_config(sched, model="<draft>"), as_json=True)
    out["SGLang"] = _or_reason(
        lambda: (
            configs.sglang.adaptive_flags(a.tiers, algorithm=algorithm)
            + "\n# adaptive.json:\n"
            + _json(configs.sglang.adaptive_config(a.tiers))
        )
    )
    out["TensorRT-LLM"] = _or_reason(
        lambda: configs.trtllm.extra_options_yaml(configs.trtllm.speculative_config(sched, model="<draft>"))
    )
    return out


def switching_notes(a: tuning.Answer) -> dict[str, str]:
    """Per stack that switches K by batch, what its K = 0 tier costs and what turning speculation back on costs,
    where the schedule turns it off at some load and on at another (empty otherwise)."""
    if not configs.switching.switches_off([c.k for c in a.choices]):
        return {}
    warm = "; ".join(
        ui.t("{n} in flight: {tps} tokens/s ({change})", n=c, tps=f"{tps:,.0f}", change=f"{change:+.1%}")
        for c, tps, change in tuning.warm_zero_tiers(a.choices, a.fits)
    )
    priced = ui.t("With one draft forward per step priced at this tune's r, the K = 0 tier gives {loads}.", loads=warm)
    return {
        stack: f"{ui.t(sw.while_off)} {ui.t(sw.back_on)} (`{sw.source}`)"
        + (f" {priced}" if stack in configs.switching.WARM_AT_ZERO and warm else "")
        for stack, sw in configs.switching.SWITCHING.items()
    }


def _json(d) -> str:
    return json.dumps(d, indent=1)


def _or_reason(make, as_json: bool = False) -> str:
    try:
        made = make()
    except ValueError as exc:
        return "# " + ui.message(exc)
    return _json(made) if as_json else str(made)


def run(s: Scenario, policy, *, stop, progress) -> tuple[list[dict], str]:
    """Measure the scenario's plan into its folder (resuming it); (its points, why the sweep ended).

    Local: the bundled pair exported to GGUF once per deployment, llama-server started on loopback per K.
    Raises Message where llama-server is not built here.
    """
    from specviz.engine.models.gguf import export_pair_gguf
    from specviz.servers import llamacpp, loadgen

    prompts = loadgen.bundled_prompts()
    p = plan(s, tune.prompts_sha(prompts))
    out = folder(s)
    if s.source == "remote":
        serve = lambda k: tune.remote(s.url, p, policy)
    else:
        binary = llamacpp.find_binary()
        if binary is None:
            raise Message("llama-server is not built on this machine: run scripts/build-llama-server (about 5 minutes)")
        gguf = tunes_dir() / "_bundled-gguf"
        target, draft = gguf / "target.gguf", gguf / "draft.gguf"
        if not (target.is_file() and draft.is_file()):
            target, draft = export_pair_gguf("bundled", gguf)
        serve = tune.local(binary, target, draft, p, out / "logs")
    return tune.sweep(p, out, serve, prompts, policy, stop=stop, progress=progress)


def pair_of(s: Scenario) -> tuple[str, str, str]:
    """(target, draft, method) the tune measured: the bundled pair where specviz started the server, else the
    models named in the Capacity section ("" where not named); method as the Validation page names it."""
    if s.source in ("local", *EXAMPLES):
        return tuple(tuning.bundled_pair().values())
    if not s.draft:
        return s.target, "", ""
    kind = heads.load_heads()["kind"].get(s.draft, "model")  # a head's kind, else a separate draft model
    return s.target, s.draft, kind if kind in published.METHODS else ""


def run_label(s: Scenario) -> str:
    """The run library's label of the tune's run."""
    return f"tune {s.source if s.source in EXAMPLES else s.name}"


_VALIDATION = {"r_target": MODELS, "r_draft": MODELS, "r_method": published.METHODS}  #: the choices it accepts


def validation_link(s: Scenario, run_id: int) -> str:
    """The Validation page's Calibrate tab on run ``run_id``, with the pair, GPU and TP the tune names."""
    target, draft, method = pair_of(s)
    query = {"view": "calibrate", "mine": "library", "run": run_id, "r_gpu": s.gpu, "r_tp": s.gpus}
    query |= {k: v for k, v in (("r_target", target), ("r_draft", draft), ("r_method", method)) if v in _VALIDATION[k]}
    return "validation?" + urlencode(query)
