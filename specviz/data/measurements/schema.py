"""The canonical measurement columns: names, units, kinds and allowed ranges (docs/design.md §3).

Names are lower case with the unit in the name (``t_target_ms``). :data:`COLUMNS`: every loaded frame;
:data:`BENCH_COLUMNS`: added by ``specviz bench`` or a load-generator run; :data:`DERIVED_COLUMNS`:
computed on load. A column's *kind* (:func:`column_kind`) decides how its cells are parsed and checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.core import theory

INT_MAX = 2**53  #: largest integer count accepted (exact in float64 and int64)


@dataclass(frozen=True)
class Rule:
    """How a column's cells are read (``kind``: text, number, positions, bool), the allowed values as
    messages state them, the library's type (``storage``), and whether a cell may end in '%' (``percent``).
    The range checks are :func:`specviz.data.measurements.checks.rules.in_range`."""

    kind: str
    allowed: str
    storage: str
    percent: bool = False


RULES: dict[str, Rule] = {
    "text": Rule("text", "", "text"),
    "k": Rule("number", f"an integer in [1, {theory.K_LIMIT}]", "int"),
    "rate": Rule("number", "[0, 1]", "float", percent=True),
    "tokens": Rule("number", "[1, K + 1]", "float"),
    "positive": Rule("number", "a finite number > 0", "float"),
    "nonnegative": Rule("number", "a finite number >= 0", "float"),
    "count": Rule("number", f"an integer in [1, {INT_MAX}]", "int"),
    "depth": Rule("number", "an integer in [1, K]", "int"),
    "c_l": Rule("number", "a finite number > 0 (c_L = T_draft / T_target)", "float"),
    "efficiency": Rule("number", "[1 / (K + 1), 1]", "float", percent=True),
    "positions": Rule("positions", "K numbers in [0, 1] (or nan) separated by ';'", "text"),
    "bool": Rule("bool", "true / false (or empty)", "bool"),
    "computed": Rule("number", "", "float"),  # a derived number: recomputed on load, never checked
    "computed_text": Rule("text", "", "text"),
}


@dataclass(frozen=True)
class Column:
    """One measurement column (docs/measurement-schema.md is generated from these). ``role``: ``"input"``,
    ``"bench"``, ``"derived"`` (recomputed on load) or ``"internal"`` (``feeds`` a canonical column);
    ``rule``: its :data:`RULES` key; ``speedup_like``: a cell may end in "x" / "×"."""

    name: str
    role: str
    rule: str
    unit: str = ""
    meaning: str = ""
    speedup_like: bool = False
    bench: bool = False
    feeds: str | None = None


#: Every measurement column, one line each, in the order frames hold them.
TABLE: tuple[Column, ...] = (
    Column("label", "input", "text", "", "run label (required)"),
    Column("k", "input", "k", "draft tokens", "draft length K, integer >= 1 (required)"),
    Column("alpha", "input", "rate", "probability", "per-token acceptance α in [0, 1]; ours: the MLE A / (A + R)"),
    Column(
        "mean_accepted_tokens",
        "input",
        "tokens",
        "tokens per round",
        "tokens per round incl. the bonus token = E[N], in [1, K + 1]",
    ),
    Column(
        "acceptance_rate", "input", "rate", "probability", "accepted / drafted draft tokens = (E[N] − 1) / K, in [0, 1]"
    ),
    Column("c", "input", "positive", "ratio", "speed ratio T_target / T_draft > 0"),
    Column("t_target_ms", "input", "positive", "ms", "one target decode step, ms > 0"),
    Column("t_draft_ms", "input", "positive", "ms", "one draft decode step, ms > 0"),
    Column("t_verify_ms", "input", "positive", "ms", "one target forward over K + 1 tokens, ms > 0"),
    Column(
        "speedup",
        "input",
        "positive",
        "×",
        "measured speculative tokens/s ÷ target-only tokens/s, > 0",
        speedup_like=True,
    ),
    Column("tokens_per_s", "input", "positive", "tokens/s", "speculative decoding throughput, tokens/s > 0"),
    Column("baseline_tokens_per_s", "input", "positive", "tokens/s", "target-only throughput, tokens/s > 0"),
    Column("temperature", "input", "nonnegative", "", "sampling temperature >= 0 (0 = greedy)"),
    Column("batch_size", "input", "count", "sequences", "sequences decoded together, integer >= 1"),
    Column("target_model", "input", "text", "", "target model name"),
    Column("draft_model", "input", "text", "", "draft model name"),
    Column("hardware", "input", "text", "", "device the run used"),
    Column("method", "input", "text", "", "speculation method (e.g. draft model, EAGLE, n-gram)"),
    Column("notes", "input", "text", "", "free text"),
    Column("alpha_overlap", "bench", "rate", "probability", "mean Σ min(p, q) over verified positions"),
    Column(
        "v",
        "bench",
        "nonnegative",
        "target steps per drafted token",
        "extra verify cost per drafted token: (T_verify / T_target − 1) / K",
    ),
    Column(
        "o",
        "bench",
        "nonnegative",
        "target steps per round",
        "per-round time beyond one verify forward and K draft steps, in target steps",
    ),
    Column(
        "per_position_acceptance",
        "bench",
        "positions",
        "probabilities",
        "a_1;a_2;…;a_K conditional acceptance per draft position",
    ),
    Column(
        "predicted_speedup_basic", "bench", "positive", "×", "specviz.core.theory.speedup(α, c, K)", speedup_like=True
    ),
    Column(
        "speedup_vs_predicted",
        "bench",
        "positive",
        "ratio",
        "median over runs of measured speedup ÷ that run's measured-cost prediction",
    ),
    Column("speedup_min", "bench", "positive", "×", "smallest per-run speedup", speedup_like=True),
    Column("speedup_max", "bench", "positive", "×", "largest per-run speedup", speedup_like=True),
    Column("runs", "bench", "count", "runs", "number of (prompt, repeat) runs aggregated"),
    Column("new_tokens", "bench", "count", "tokens", "tokens generated per run"),
    Column(
        "greedy_exact",
        "bench",
        "bool",
        "",
        "temperature 0 only: speculative output equal to target-only output in every run",
    ),
    Column("device", "bench", "text", "", "torch device"),
    Column(
        "compiled",
        "bench",
        "bool",
        "",
        "the engine's decode steps ran compiled (torch.compile; CUDA graphs on CUDA), not eagerly",
    ),
    Column("compile_s", "bench", "nonnegative", "s", "seconds spent compiling the cell's decode steps, >= 0"),
    Column("dtype", "bench", "text", "", "model dtype"),
    Column("torch_version", "bench", "text", "", "torch version"),
    Column("source", "bench", "text", "", "what produced the row"),
    Column(
        "tree",
        "bench",
        "text",
        "",
        "draft tree of a tree row, e.g. optimal:16,6 (16 drafts, depth 6); K is then its drafts",
    ),
    Column(
        "tree_depth",
        "bench",
        "depth",
        "draft forwards per round",
        "draft forwards per round of a tree row: its depth D, integer in [1, K]",
    ),
    Column(
        "tree_p", "bench", "text", "", "p_1;p_2;… positional acceptance by sibling rank, measured from the row's rounds"
    ),
    Column(
        "predicted_tokens_per_round",
        "bench",
        "tokens",
        "tokens per round",
        "tree rows: F(T) = Σ over nodes of Π p along the path, at tree_p, in [1, K + 1]",
    ),
    # a serving run of the load generator (specviz.servers.loadgen.load_record); vllm bench serve's measures
    Column(
        "concurrency",
        "bench",
        "count",
        "requests",
        "serving runs: requests in flight, integer >= 1 (a closed loop's always, an open loop's at most)",
    ),
    Column(
        "request_rate",
        "bench",
        "positive",
        "requests/s",
        "serving runs: the open loop's Poisson arrival rate λ, requests/s > 0 (empty: a closed loop)",
    ),
    Column("prompt_tokens", "bench", "positive", "tokens", "serving runs: mean prompt tokens per request, > 0"),
    Column(
        "output_tokens", "bench", "positive", "tokens", "serving runs: mean output tokens per completed request, > 0"
    ),
    # acceptance by context and domain (specviz.core.acceptance)
    Column(
        "context_length",
        "bench",
        "positive",
        "tokens",
        "mean context of the row's decode steps (prompt + tokens generated so far), tokens > 0; empty: prompt_tokens + output_tokens / 2 where known",
    ),
    Column("domain", "bench", "text", "", "dataset or task of the prompts (code, chat, math, summarisation, …)"),
    Column(
        "rounds",
        "bench",
        "count",
        "rounds",
        "verification rounds the row's acceptance was counted over, integer >= 1 (gives its confidence interval)",
    ),
    *(
        Column(
            f"ttft_{q}_ms",
            "bench",
            "positive",
            "ms",
            f"serving runs: time to first token, {q} over requests (send → first chunk with text), ms > 0",
        )
        for q in ("p50", "p90", "p99")
    ),
    *(
        Column(
            f"tpot_{q}_ms",
            "bench",
            "nonnegative",
            "ms",
            f"serving runs: time per output token after the first, {q} over requests of (E2E − TTFT) / (tokens − 1), ms >= 0",
        )
        for q in ("p50", "p90", "p99")
    ),
    *(
        Column(
            f"itl_{q}_ms",
            "bench",
            "nonnegative",
            "ms",
            f"serving runs: inter-token latency, {q} over the gaps between streamed chunks (a chunk may carry several tokens), ms >= 0",
        )
        for q in ("p50", "p90", "p99")
    ),
    Column(
        "alpha_used",
        "derived",
        "computed",
        "probability",
        "α used for predictions: alpha if given, else recovered from mean_accepted_tokens, else from acceptance_rate (specviz.core.theory); empty for speedup-only rows",
    ),
    Column("alpha_source", "derived", "computed_text", "", "which column alpha_used came from"),
    Column(
        "c_used",
        "derived",
        "computed",
        "ratio",
        "c used for predictions: c if given (or 1 / c_L), else t_target_ms / t_draft_ms",
    ),
    Column("c_source", "derived", "computed_text", "", "which column(s) c_used came from"),
    Column(
        "predicted_speedup",
        "derived",
        "computed",
        "×",
        "basic model: specviz.core.theory.speedup(alpha_used, c_used, k)",
    ),
    Column(
        "predicted_speedup_measured_cost",
        "derived",
        "computed",
        "×",
        "specviz.core.theory.speedup(alpha_used, c_used, k, v, o) where v or o is known (the other taken as 0)",
        bench=True,
    ),
    Column("speedup_ratio", "derived", "computed", "ratio", "measured / predicted: speedup / predicted_speedup"),
    Column("c_l", "internal", "c_l", feeds="c", meaning="Leviathan's c_L = T_draft / T_target, converted to c"),
    Column(
        "system_efficiency",
        "internal",
        "efficiency",
        feeds="mean_accepted_tokens",
        meaning="SGLang's accept rate E[N] / (K + 1), converted to E[N]",
    ),
)
BY_NAME: dict[str, Column] = {c.name: c for c in TABLE}
assert len(BY_NAME) == len(TABLE), "a column is listed twice"


def _names(role: str) -> dict[str, str]:
    return {c.name: c.meaning for c in TABLE if c.role == role or (role == "bench" and c.bench)}


def _with(test) -> tuple[str, ...]:
    return tuple(c.name for c in TABLE if test(c))


# Views of TABLE, the names the loader, the store and the reference document use.
COLUMNS: dict[str, str] = _names("input")  #: every loaded frame holds these: name -> meaning
BENCH_COLUMNS: dict[str, str] = _names("bench")  #: what ``specviz bench`` or a serving run adds (optional on upload)
DERIVED_COLUMNS: dict[str, str] = _names("derived")  #: computed on load (an input column is recomputed)
UNITS: dict[str, str] = {c.name: c.unit for c in TABLE if c.unit and c.role != "internal"}
TEXT_COLUMNS: tuple[str, ...] = _with(lambda c: c.rule == "text")
UNIT_COLUMNS: tuple[str, ...] = _with(lambda c: c.rule == "rate")  #: rates in [0, 1]; percent cells / 100
INTEGER_COLUMNS: tuple[str, ...] = _with(lambda c: c.rule in ("count", "depth"))  #: integer counts other than k
SPEEDUP_LIKE: tuple[str, ...] = _with(lambda c: c.speedup_like)  #: cells may end in "x" / "×"
PERCENT_COLUMNS: tuple[str, ...] = _with(lambda c: RULES[c.rule].percent)  #: cells may end in '%'
INTERNAL_COLUMNS: dict[str, str] = {c.name: c.feeds for c in TABLE if c.role == "internal"}
#: The acceptance measures; a row needs one of them (or a speedup).
ACCEPTANCE_COLUMNS: tuple[str, ...] = ("alpha", "mean_accepted_tokens", "acceptance_rate")
#: Allowed values of each checked column, as messages state them.
ALLOWED: dict[str, str] = {c.name: RULES[c.rule].allowed for c in TABLE if RULES[c.rule].allowed}


def rule(name: str) -> str:
    """The :data:`RULES` key of column ``name``."""
    return BY_NAME[name].rule


def storage(name: str) -> str:
    """The run library's type of column ``name``: ``"text"``, ``"int"``, ``"float"`` or ``"bool"``."""
    return RULES[BY_NAME[name].rule].storage


def column_kind(name: str) -> str:
    """``"text"``, ``"positions"``, ``"bool"`` or ``"number"`` (also for a name that is no column)."""
    column = BY_NAME.get(name)
    return RULES[column.rule].kind if column is not None else "number"


def output_column(name: str) -> str:
    """The canonical column an internal one feeds (``c_l`` → ``c``); other names unchanged."""
    return INTERNAL_COLUMNS.get(name, name)


def suffixes(name: str) -> str:
    """Unit suffixes a cell of ``name`` may carry: '%' for rates, 'x' for speedups."""
    return ("%" if name in PERCENT_COLUMNS else "") + ("x" if name in SPEEDUP_LIKE else "")
