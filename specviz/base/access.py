"""Who is using specviz, and what they may do: identities, roles and the rule for every action.

No streamlit here: the pages find the person (:mod:`specviz.app.ui.identity`: Streamlit's OpenID Connect
sign-in, or a trusted proxy's header), and the run library (:mod:`specviz.data.store`) checks each write
with :func:`require`, so a page bug or a hand-made request cannot bypass the rules.

Three roles (docs/deploy.md, "Sign-in and roles"):

- ``viewer``: browse, overlay, export;
- ``editor``: also save runs, edit and trash their own, restore their own from the trash, save engine
  profiles, run the Live benchmark and the load generator;
- ``admin``: also trash and restore anyone's runs, purge the trash, see the audit trail.

Roles come from configuration: ``SPECVIZ_ADMINS`` and ``SPECVIZ_EDITORS`` list e-mail addresses and
``@domain`` entries (any case); a signed-in person on neither list gets ``SPECVIZ_DEFAULT_ROLE``
(``viewer`` unless set). One person on their own machine (not hosted, no sign-in configured) is
:data:`LOCAL`, with every right, as before sign-in existed.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from specviz.base import hosting, settings
from specviz.base.i18n import N_, Message, Phrase

__all__ = [
    "ACTIONS",
    "LOCAL",
    "ROLES",
    "AccessError",
    "Identity",
    "anonymous",
    "default_identity",
    "may",
    "require",
    "role_of",
    "sign_in_configured",
    "signed_in",
]

ROLES = ("viewer", "editor", "admin")  #: from least to most
ROLE_NAMES = {"viewer": N_("viewer"), "editor": N_("editor"), "admin": N_("admin")}  #: role -> its name
#: action -> (the role it needs on one's own runs, the role it needs on anyone's). Owner-free actions
#: (save, purge, audit, live, loadgen) need the same role either way.
ACTIONS: dict[str, tuple[str, str]] = {
    "browse": ("viewer", "viewer"),
    "save": ("editor", "editor"),
    "edit": ("editor", "admin"),
    "trash": ("editor", "admin"),
    "restore": ("editor", "admin"),
    "purge": ("admin", "admin"),
    "audit": ("admin", "admin"),
    "profile": ("editor", "editor"),
    "profile_delete": ("editor", "admin"),
    "live": ("editor", "editor"),
    "loadgen": ("editor", "editor"),
}
ACTION_NAMES = {
    "browse": N_("browse the library"),
    "save": N_("save runs"),
    "edit": N_("edit runs"),
    "trash": N_("move runs to the trash"),
    "restore": N_("restore runs from the trash"),
    "purge": N_("purge the trash"),
    "audit": N_("see the audit trail"),
    "profile": N_("save or delete engine profiles"),
    "profile_delete": N_("delete engine profiles"),
    "live": N_("run the Live benchmark"),
    "loadgen": N_("run the load generator"),
}  #: action -> its name in messages


@dataclass(frozen=True)
class Identity:
    """A person using specviz: ``email`` ("" for the local user and for someone not signed in), ``role``
    (:data:`ROLES`) and ``how`` they were identified: ``"local"``, ``"oidc"``, ``"proxy"`` or
    ``"anonymous"`` (hosted and not signed in)."""

    email: str
    role: str
    how: str

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}; got {self.role!r}")

    @property
    def name(self) -> str:
        """What the library records as the owner of what this person saves ("" for the local user)."""
        return self.email


LOCAL = Identity("", "admin", "local")  #: one person on their own machine: every right


class AccessError(Message):
    """An action the person's role does not allow; the message names the action and the role it needs."""


def _entries(name: str, environ: Mapping[str, str] | None) -> list[str]:
    return [e.strip().lower() for e in settings.value(name, environ).split(",") if e.strip()]


def _listed(email: str, entries: list[str]) -> bool:
    """``email`` is one of ``entries`` or under one of their ``@domain``s."""
    email = email.strip().lower()
    domain = email.rpartition("@")[2]
    return any(email == e or (e.startswith("@") and domain == e[1:]) for e in entries)


def role_of(email: str, environ: Mapping[str, str] | None = None) -> str:
    """The role of a signed-in ``email``: admin if ``SPECVIZ_ADMINS`` lists it (or its domain), else editor
    if ``SPECVIZ_EDITORS`` does, else ``SPECVIZ_DEFAULT_ROLE`` (viewer unless set)."""
    if _listed(email, _entries("SPECVIZ_ADMINS", environ)):
        return "admin"
    if _listed(email, _entries("SPECVIZ_EDITORS", environ)):
        return "editor"
    default = settings.value("SPECVIZ_DEFAULT_ROLE", environ).lower() or "viewer"
    if default not in ROLES:
        raise Message(
            "{name} must be one of {roles}; got {value!r}",
            name="SPECVIZ_DEFAULT_ROLE",
            roles=", ".join(ROLES),
            value=settings.value("SPECVIZ_DEFAULT_ROLE", environ),
        )
    return default


def signed_in(email: str, how: str, environ: Mapping[str, str] | None = None) -> Identity:
    """The identity of someone signed in as ``email`` through ``how`` ("oidc" or "proxy")."""
    email = email.strip()
    if not email or "@" not in email:
        raise Message("the sign-in gave no e-mail address (got {value!r}); the provider must send one", value=email)
    return Identity(email, role_of(email, environ), how)


def anonymous() -> Identity:
    """Someone not signed in on a hosted server (or one that requires sign-in): a viewer."""
    return Identity("", "viewer", "anonymous")


def _secrets_files(environ: Mapping[str, str]) -> list[Path]:
    """Where Streamlit reads ``secrets.toml``: ``STREAMLIT_SECRETS_FILES`` (comma-separated) if set, else the
    global ``~/.streamlit/secrets.toml`` and the project's ``.streamlit/secrets.toml``."""
    listed = environ.get("STREAMLIT_SECRETS_FILES", "").strip()
    if listed:
        return [Path(p.strip()) for p in listed.split(",") if p.strip()]
    return [Path.home() / ".streamlit" / "secrets.toml", Path.cwd() / ".streamlit" / "secrets.toml"]


def oidc_configured(environ: Mapping[str, str] | None = None) -> bool:
    """A ``secrets.toml`` Streamlit reads has an ``[auth]`` section (OpenID Connect through ``st.login``)."""
    environ = os.environ if environ is None else environ
    for path in _secrets_files(environ):
        try:
            if "auth" in tomllib.loads(path.read_text(encoding="utf-8")):
                return True
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
    return False


def sign_in_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Sign-in is set up: OpenID Connect (:func:`oidc_configured`) or a trusted proxy header (``SPECVIZ_AUTH_HEADER``)."""
    return bool(settings.value("SPECVIZ_AUTH_HEADER", environ)) or oidc_configured(environ)


def default_identity(environ: Mapping[str, str] | None = None) -> Identity:
    """Who a caller that names no one is: :data:`LOCAL` on one person's own machine; else AccessError (a
    hosted server or one with sign-in configured acts only for a named person)."""
    if hosting.is_hosted(environ) or sign_in_configured(environ):
        raise AccessError(
            "this server is hosted or has sign-in configured, so the run library changes only for a signed-in person; none was named"
        )
    return LOCAL


def _needed(who: Identity, action: str, owner: str | None) -> str:
    """The role ``action`` needs of ``who`` on what ``owner`` saved: the own-work role on their own (or
    owner-free) work and for the local user, who owns everything on their own machine; else the any-work role."""
    own_role, any_role = ACTIONS[action]
    own = owner is None or who.how == "local" or bool(who.email and owner.lower() == who.email.lower())
    return own_role if own else any_role


def may(who: Identity, action: str, owner: str | None = None) -> bool:
    """Whether ``who`` may do ``action`` (:data:`ACTIONS`) on something ``owner`` saved (None: owner-free)."""
    return ROLES.index(who.role) >= ROLES.index(_needed(who, action, owner))


def require(who: Identity, action: str, owner: str | None = None, environ: Mapping[str, str] | None = None) -> None:
    """AccessError naming the action and the role it needs unless ``who`` may do it. The local identity is
    refused outright on a hosted server or one with sign-in configured (a page must name the person)."""
    if who.how == "local" and who != LOCAL:
        raise AccessError("an identity that is not the local user claims to be it")
    if who.how == "local":
        default_identity(environ)  # raises where the local user does not exist
    if may(who, action, owner):
        return
    needed = _needed(who, action, owner)
    fields = dict(
        action=Phrase(ACTION_NAMES[action]),
        needed=Phrase(ROLE_NAMES[needed]),
        role=Phrase(ROLE_NAMES[who.role]),
        who=who.email or Phrase(N_("not signed in")),
    )
    if needed != ACTIONS[action][0]:
        raise AccessError(
            "to {action} that someone else saved, you need the {needed} role; you are {role} ({who})", **fields
        )
    raise AccessError("to {action} you need the {needed} role; you are {role} ({who})", **fields)
