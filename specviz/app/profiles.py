"""Stack profiles as a control: the named ones of the catalogue and ``custom`` (terms in the link).

A custom profile is the text of :func:`specviz.core.profiles.encode_terms`, carried in a link as
``engine=custom`` and ``eng_terms=<text>`` and saved in the run library (``store.save_profile``) under a
name. A page declares :func:`profile_param` and :func:`terms_param`, draws them with
:func:`profile_controls`, and puts the :class:`Profile` of their values in its scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from specviz.app import ui
from specviz.app.share import Param
from specviz.base.i18n import N_, Message, Phrase
from specviz.core import profiles
from specviz.core.profiles import Efficiency
from specviz.data import store

CUSTOM = "custom"  #: the profile choice "custom profile (terms in the link)"


def profile_choices() -> tuple[str, ...]:
    """The profile control's choices: the catalogue's profiles (the default roofline first), then custom."""
    return (*profiles.profile_names(), CUSTOM)


def profile_param(key: str = "engine", default: str = profiles.DEFAULT_PROFILE) -> Param:
    """The profile control (a choice of :func:`profile_choices`)."""
    return Param(key, default, "choice", choices=profile_choices(), label=N_("Engine profile"))


def terms_param(key: str = "eng_terms") -> Param:
    """The custom profile's terms (free text, checked by :func:`specviz.core.profiles.decode_terms`)."""
    return Param(key, "", "text", hi=profiles.MAX_TERMS_CHARS, label=N_("Custom profile terms (name=value, …)"))


def profile_label(name: str) -> str:
    """A choice's label in this session's language: the catalogue's label, or "custom profile"."""
    if name == CUSTOM:
        return ui.t("custom profile (terms in the link)")
    if name in profiles.FAMILY_LABELS:
        return ui.t(profiles.FAMILY_LABELS[name])
    if name == profiles.DEFAULT_PROFILE:
        return ui.t(profiles.DEFAULT_LABEL)
    return _labels()[name]


@cache
def _labels() -> dict[str, str]:
    """Each catalogue profile's label, read once: a selectbox asks for every choice's on every rerun."""
    return {name: str(label) for name, label in profiles.load_profiles()["label"].items()}


def efficiency(name: str, terms: str = "") -> Efficiency | None:
    """The profile of (``name``, ``terms``): None for the default roofline (the caller's default, so a
    calibrated machine keeps its own figures), a catalogue profile, or the custom ``terms``.

    Raises Message naming the terms box and a bad term or value (:func:`specviz.core.profiles.decode_terms`)."""
    if name == CUSTOM:
        try:
            return profiles.decode_terms(terms)
        except Message as exc:  # the library names the term; the person typed it in this box
            raise Message("{control}: {cause}", control=Phrase(terms_param().label), cause=exc) from None
    return None if name == profiles.DEFAULT_PROFILE else profiles.profile(name)


@dataclass(frozen=True)
class Profile:
    """A profile control's value: a catalogue profile's name, or ``custom`` with its ``terms``."""

    name: str = profiles.DEFAULT_PROFILE
    terms: str = ""  #: a custom profile's terms (:func:`specviz.core.profiles.encode_terms`); "" otherwise

    @classmethod
    def of(cls, name: str, terms: str = "") -> Profile:
        """The profile of a page's two controls; a catalogue profile ignores the terms box."""
        return cls(name, terms if name == CUSTOM else "")

    def efficiency(self) -> Efficiency | None:
        """:func:`efficiency` of this profile (raises Message naming a bad custom term)."""
        return efficiency(self.name, self.terms)

    def caption(self) -> str:
        """:func:`caption` of this profile."""
        return caption(self.name, self.terms)


def caption(name: str, terms: str = "") -> str:
    """What priced a figure, in this session's language: a catalogue profile and what it was fitted on,
    or the custom profile's terms."""
    if name == CUSTOM:
        shown = terms.strip() or ui.t("the default terms")
        return ui.t("Priced with a custom engine profile: {terms}.", terms=shown)
    row = profiles.load_profiles().loc[name]
    fitted = ui.t("fitted on {sources}", sources=row["fitted_on"]) if row["fitted_on"] else ui.t("not fitted")
    return ui.t("Priced with the engine profile {engine} ({fitted}).", engine=profile_label(name), fitted=fitted)


def saved_profiles() -> pd.DataFrame:
    """The run library's saved profiles (``store.list_profiles``), or an empty table after an st.error
    when the library cannot be read."""
    library = ui.library()
    if library is not None:
        try:
            return store.list_profiles(library)
        except ValueError as exc:
            ui.show_error(exc)
    return pd.DataFrame(columns=list(store.PROFILE_COLUMNS))


def _pick_saved(picker_key: str, terms_key: str, saved: dict[str, str]) -> None:
    """on_change of the saved-profile box: its terms go into the terms control."""
    name = st.session_state[picker_key]
    if name in saved:
        st.session_state[terms_key] = saved[name]


def profile_controls(page: str, profile: Param, terms: Param) -> None:
    """The profile selectbox; for ``custom``, a box of the library's saved profiles (choosing one fills the
    terms) and the terms text."""
    ui.selectbox(page, profile, format_func=profile_label)
    if st.session_state[ui.key(page, profile.key)] != CUSTOM:
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


def save_section(page: str, name_param: Param, base: str, summary: dict, terms: str, url: str, show) -> None:
    """Save a fitted profile (``terms``, fitted from ``base`` on rows ``summary`` describes) to the run library
    under the name typed in ``name_param``, and list the saved ones; ``show(frame, key)`` draws a table."""
    st.subheader(ui.t("Save the profile"))
    st.markdown(f"[{ui.t('Open in Hardware & batch')}]({hardware_link(terms)})")
    engine = ui.library()
    if engine is None:
        return
    if (why := ui.refusal(ui.identity(), "profile")) is not None:  # hosted, not signed in: no Save to refuse later
        st.info(why, icon=":material/lock:")
        saved_list(page, engine, url, show, deletes=False)
        return
    ui.text_box(page, name_param)
    name = st.session_state[ui.key(page, name_param.key)]
    if st.button(ui.t("Save profile"), key=ui.key(page, "save"), icon=":material/save:", type="primary"):
        try:
            store.save_profile(engine, name=name, terms=terms, base_engine=base, **summary, who=ui.identity(), page=url)
            st.success(ui.t("Saved as {name}.", name=name.strip()), icon=":material/check:")
        except ValueError as exc:
            ui.show_error(exc)
    saved_list(page, engine, url, show)


def saved_list(page: str, engine, url: str, show, deletes: bool = True) -> None:
    """The run library's saved profiles, and (``deletes``) a guarded delete of one."""
    st.subheader(ui.t("Saved profiles"))
    try:
        saved = store.list_profiles(engine)
    except ValueError as exc:
        ui.show_error(exc)
        return
    if saved.empty:
        st.caption(ui.t("No profile is saved yet."))
        return
    show(saved.drop(columns=["id"]), "tbl_saved")
    if not deletes:
        return
    name = st.selectbox(ui.t("Profile to delete"), saved["name"], index=None, key=ui.key(page, "del_name"))
    if name is None:
        return
    st.markdown(f"[{ui.t('Open in Hardware & batch')}]({hardware_link(saved.set_index('name').loc[name, 'terms'])})")
    sure_key = ui.key(page, "del_sure")
    sure = st.checkbox(ui.t("Yes, delete the profile {name} for everyone using this library", name=name), key=sure_key)
    if st.button(ui.t("Delete profile"), key=ui.key(page, "delete"), icon=":material/delete:", disabled=not sure):
        try:
            gone = store.delete_profile(engine, name, who=ui.identity(), page=url)
        except ValueError as exc:  # a role that may not delete it: said, nothing deleted
            ui.show_error(exc)
            return
        st.toast(ui.t("Deleted {name}.", name=name) if gone else ui.t("{name} was already deleted.", name=name))
        del st.session_state[sure_key]
        st.rerun()
