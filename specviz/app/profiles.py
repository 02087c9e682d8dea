"""Engine profiles as a control: the named ones of the catalogue and ``custom`` (terms in the link).

A custom profile is the text of :func:`specviz.core.engines.encode_terms`, carried in a link as
``engine=custom`` and ``eng_terms=<text>`` and saved in the run library (``store.save_profile``) under a
name. A page declares :func:`engine_param` and :func:`terms_param`, draws them with
:func:`engine_controls`, and puts the :class:`Profile` of their values in its scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from specviz.app import ui
from specviz.app.share import Param
from specviz.base.i18n import N_
from specviz.core import engines
from specviz.core.engines import Efficiency
from specviz.data import store

CUSTOM = "custom"  #: the engine choice "custom profile (terms in the link)"


def engine_choices() -> tuple[str, ...]:
    """The engine control's choices: the catalogue's profiles (the default roofline first), then custom."""
    return (*engines.engine_names(), CUSTOM)


def engine_param(key: str = "engine") -> Param:
    """The engine control (a choice of :func:`engine_choices`)."""
    return Param(key, engines.DEFAULT_ENGINE, "choice", choices=engine_choices(), label=N_("Engine profile"))


def terms_param(key: str = "eng_terms") -> Param:
    """The custom profile's terms (free text, checked by :func:`specviz.core.engines.decode_terms`)."""
    return Param(key, "", "text", hi=engines.MAX_TERMS_CHARS, label=N_("Custom profile terms (name=value, …)"))


def engine_label(engine: str) -> str:
    """A choice's label in this session's language: the catalogue's label, or "custom profile"."""
    if engine == CUSTOM:
        return ui.t("custom profile (terms in the link)")
    if engine in engines.FAMILY_LABELS:
        return ui.t(engines.FAMILY_LABELS[engine])
    return str(engines.load_engines().loc[engine, "label"])


def efficiency(engine: str, terms: str = "") -> Efficiency | None:
    """The profile of (``engine``, ``terms``): None for the default roofline (the caller's default, so a
    calibrated machine keeps its own figures), a catalogue profile, or the custom ``terms``.

    Raises Message naming a bad term or value (:func:`specviz.core.engines.decode_terms`)."""
    if engine == CUSTOM:
        return engines.decode_terms(terms)
    return None if engine == engines.DEFAULT_ENGINE else engines.profile(engine)


@dataclass(frozen=True)
class Profile:
    """An engine control's value: a catalogue profile's name, or ``custom`` with its ``terms``."""

    engine: str = engines.DEFAULT_ENGINE
    terms: str = ""  #: a custom profile's terms (:func:`specviz.core.engines.encode_terms`); "" otherwise

    @classmethod
    def of(cls, engine: str, terms: str = "") -> Profile:
        """The profile of a page's two controls; a catalogue profile ignores the terms box."""
        return cls(engine, terms if engine == CUSTOM else "")

    def efficiency(self) -> Efficiency | None:
        """:func:`efficiency` of this profile (raises Message naming a bad custom term)."""
        return efficiency(self.engine, self.terms)

    def caption(self) -> str:
        """:func:`caption` of this profile."""
        return caption(self.engine, self.terms)


def caption(engine: str, terms: str = "") -> str:
    """What priced a figure, in this session's language: a catalogue profile and what it was fitted on,
    or the custom profile's terms."""
    if engine == CUSTOM:
        shown = terms.strip() or ui.t("the default terms")
        return ui.t("Priced with a custom engine profile: {terms}.", terms=shown)
    row = engines.load_engines().loc[engine]
    fitted = ui.t("fitted on {sources}", sources=row["fitted_on"]) if row["fitted_on"] else ui.t("not fitted")
    return ui.t("Priced with the engine profile {engine} ({fitted}).", engine=engine_label(engine), fitted=fitted)


def saved_profiles() -> pd.DataFrame:
    """The run library's saved profiles (``store.list_profiles``), or an empty table after an st.error
    when the library cannot be read."""
    engine = ui.library()
    if engine is not None:
        try:
            return store.list_profiles(engine)
        except ValueError as exc:
            ui.show_error(exc)
    return pd.DataFrame(columns=list(store.PROFILE_COLUMNS))


def _pick_saved(picker_key: str, terms_key: str, saved: dict[str, str]) -> None:
    """on_change of the saved-profile box: its terms go into the terms control."""
    name = st.session_state[picker_key]
    if name in saved:
        st.session_state[terms_key] = saved[name]


def engine_controls(page: str, engine: Param, terms: Param) -> None:
    """The engine selectbox; for ``custom``, a box of the library's saved profiles (choosing one fills the
    terms) and the terms text."""
    ui.selectbox(page, engine, format_func=engine_label)
    if st.session_state[ui.key(page, engine.key)] != CUSTOM:
        return
    saved = saved_profiles()
    by_name = dict(zip(saved["name"], saved["terms"], strict=True))
    if by_name:
        picker = ui.key(page, f"{terms.key}._saved")
        st.selectbox(
            ui.t("Saved profile"),
            list(by_name),
            index=None,
            placeholder=ui.t("choose a saved profile"),
            key=picker,
            on_change=_pick_saved,
            args=(picker, ui.key(page, terms.key), by_name),
        )
    ui.text_box(page, terms)


def hardware_link(terms: str) -> str:
    """The Hardware & batch page's relative link, priced with the custom profile ``terms``."""
    return "hardware?" + urlencode({"engine": CUSTOM, "eng_terms": terms})
