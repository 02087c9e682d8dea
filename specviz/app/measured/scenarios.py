"""The measured-data pages' controls (Params), the frozen scenario each page builds from them, and where an
old ``/measured-data`` link lands."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specviz.app.share import Param, by_key
from specviz.base.i18n import N_
from specviz.core import acceptance
from specviz.data import measurements

PAGE = "measured"  #: the widget-key prefix of the three pages: a selection of runs follows from one to the next
LIBRARY, COMPARE, PUBLISHED = "run-library", "compare-runs", "published-acceptance"  #: their URL paths
OLD_ROUTE = "measured-data"  #: the page the three were split from; its links still open

FORMATS = {"auto": "detect"} | {name: measurements.READERS[name].title for name in sorted(measurements.READERS)}
SAMPLES = tuple(measurements.available_samples())
RUNS = Param("runs", [], "ints", 1, 2**63 - 1)
LIBRARY_SPEC = (  # shared in the URL
    RUNS,
    Param("filter", "", "text", hi=200, label=N_("Filter by label, model, hardware or method")),
)
COMPARE_SPEC = (
    RUNS,
    Param("hk", 0, "int", 0, 64, label=N_("K of the heatmap (0 = the most common K of the selection)")),
)
PRIOR_KEYS = tuple(  # method/domain of every published prior (acceptance.domain_priors), in its order
    f"{m}/{d}"
    for m, d in acceptance.domain_priors(acceptance.load_reference())[["method", "domain"]].itertuples(index=False)
)


def prior_param(key: str, label: str) -> Param:
    """A choice of one published prior (method/domain), EAGLE-3 on chat by default."""
    default = "eagle3/chat" if "eagle3/chat" in PRIOR_KEYS else PRIOR_KEYS[0]
    return Param(key, default, "choice", choices=PRIOR_KEYS, label=label)


PUBLISHED_SPEC = (RUNS, prior_param("prior", N_("Start from the published α of (method/domain)")))
OPTIONS = (  # how staged files are read: not in the URL (a link does not carry the files either)
    Param("format", "auto", "choice", choices=tuple(FORMATS), label=N_("Format")),
    Param("k_given", 0, "int", 0, 4096, label=N_("K for files that do not state it (0 = not given)")),
    Param("no_bonus", False, "bool", label=N_("Mean acceptance length excludes the bonus token")),
    Param("trash_pick", [], "ints", 1, 2**63 - 1, label=N_("Runs in the trash")),
) + ((Param("sample", SAMPLES[0], "choice", choices=SAMPLES, label=N_("Sample files")),) if SAMPLES else ())
P = by_key(LIBRARY_SPEC + COMPARE_SPEC[1:] + PUBLISHED_SPEC[1:] + OPTIONS)


@dataclass(frozen=True)
class ReadOptions:
    """How a staged file is read: its format (a reader's name or ``"auto"``), K where the file gives none
    (0: not given) and whether its mean acceptance length leaves out the bonus token."""

    format: str = "auto"
    k_given: int = 0
    no_bonus: bool = False


@dataclass(frozen=True)
class LibraryView:
    """The run library page: the selected run ids, the text filter and how staged files are read."""

    runs: tuple[int, ...] = ()
    filter: str = ""
    read: ReadOptions = ReadOptions()

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> LibraryView:
        read = ReadOptions(values["format"], int(values["k_given"]), bool(values["no_bonus"]))
        return cls(tuple(int(i) for i in values["runs"]), values["filter"], read)


@dataclass(frozen=True)
class Comparison:
    """The compare-runs page: the selected run ids and the K of the (α, c) map (0: the most common K)."""

    runs: tuple[int, ...] = ()
    hk: int = 0

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Comparison:
        return cls(tuple(int(i) for i in values["runs"]), int(values["hk"]))


@dataclass(frozen=True)
class Published:
    """The against-published page: the selected run ids and the language of the differences column."""

    runs: tuple[int, ...] = ()
    lang: str = "en"

    @classmethod
    def of(cls, values: Mapping[str, Any], lang: str) -> Published:
        return cls(tuple(int(i) for i in values["runs"]), lang)


def old_route(query: Mapping[str, Any]) -> str:
    """The page a ``/measured-data`` link opens: compare runs where it names the heatmap's K, or runs
    without a library filter (a view of runs on the theory); else the run library."""
    if "hk" in query or ("runs" in query and "filter" not in query):
        return COMPARE
    return LIBRARY
