"""Who is using this browser session: Streamlit's OpenID Connect sign-in, a trusted proxy's header, or the
local user (:mod:`specviz.base.access` has the roles and rules; the run library enforces them).

- **A trusted proxy** (``SPECVIZ_AUTH_HEADER`` set, e.g. ``X-Forwarded-Email`` behind oauth2-proxy): the
  header's e-mail, read with ``st.context.headers``. Only set it behind a proxy that strips the header
  from clients and adds its own, with Streamlit bound to loopback (docs/deploy.md §8).
- **OpenID Connect** (an ``[auth]`` section in ``secrets.toml``): ``st.user`` after ``st.login``.
- **Neither**: the local user on one's own machine; on a hosted server, someone not signed in (a viewer:
  the library is read-only, and the pages say why).
"""

from __future__ import annotations

import streamlit as st

from specviz.app.ui.language import language, t
from specviz.base import access, hosting, settings

__all__ = ["current", "oidc_configured", "refusal", "sidebar"]


def oidc_configured() -> bool:
    """Streamlit's sign-in is set up: ``st.secrets`` has ``[auth]`` (or a secrets file the store reads does)."""
    try:
        if "auth" in st.secrets:
            return True
    except (OSError, KeyError, st.errors.StreamlitSecretNotFoundError):  # no secrets, or none this user may read
        pass
    return access.oidc_configured()


def current() -> access.Identity:
    """The person using this session (an e-mail the sign-in or proxy gives that is not one is refused)."""
    header = settings.value("SPECVIZ_AUTH_HEADER")
    if header:
        email = (st.context.headers.get(header) or "").strip()
        return access.signed_in(email, "proxy") if email else access.anonymous()
    if oidc_configured():
        if getattr(st.user, "is_logged_in", False):
            return access.signed_in(str(st.user.get("email") or ""), "oidc")
        return access.anonymous()
    if hosting.is_hosted():
        return access.anonymous()
    return access.LOCAL


def refusal(who: access.Identity, action: str, owner: str | None = None) -> str | None:
    """Why ``who`` may not do ``action`` here, in the session's language (None: allowed)."""
    try:
        access.require(who, action, owner)
    except access.AccessError as exc:
        if who.how == "anonymous" and not (oidc_configured() or settings.value("SPECVIZ_AUTH_HEADER")):
            return t(
                "This hosted server has no sign-in configured, so its run library is read-only: browse, overlay and download. The operator sets up sign-in (docs/deploy.md §8) to save."
            )
        if who.how == "anonymous":
            return t("Sign in to {action}.", action=t(access.ACTION_NAMES[action]))
        return exc.text(language())
    return None


def sidebar() -> None:
    """Who is signed in and their role, with Sign out; or Sign in where OpenID Connect is configured."""
    try:
        who = current()
    except ValueError as exc:  # a sign-in without an e-mail address
        st.error(exc.text(language()) if hasattr(exc, "text") else str(exc))
        return
    if who.how == "local":
        return
    if who.email:
        st.caption(t("Signed in as {email} ({role})", email=who.email, role=t(access.ROLE_NAMES[who.role])))
        if who.how == "oidc" and st.button(t("Sign out"), key="identity.logout", icon=":material/logout:"):
            st.logout()
    elif oidc_configured():
        if st.button(t("Sign in"), key="identity.login", icon=":material/login:", type="primary"):
            st.login()
        st.caption(t("Not signed in: you can browse; sign in to save."))
