"""End-to-end, in headless Chromium: signing in to specviz and what each role may then do on the Run library.

- **OpenID Connect**: a real provider, ``oidc-provider-mock`` (a Flask app, served here by werkzeug on a
  thread on 127.0.0.1), is the ``[auth]`` of a ``secrets.toml`` the app reads (``STREAMLIT_SECRETS_FILES``).
  A viewer, an editor and an admin each press the sidebar's *Sign in*, type their e-mail into the provider's
  authorization form (its ``sub``; the provider's user has it as the ``email`` claim), come back signed in,
  and find on the page what their role allows: a viewer cannot save or trash and is told why; an editor
  saves a pasted CSV (the library records them as its owner) and moves it to the trash but has no audit
  trail; an admin reads the editor's save and trash in the audit trail and purges the run.
- **A trusted proxy's header** (``SPECVIZ_AUTH_HEADER=X-Forwarded-Email``): a reverse proxy in this process
  (:func:`header_proxy`) sets the header on every request, the WebSocket handshake that
  ``st.context.headers`` reads included (Chromium before 151 leaves Playwright's extra HTTP headers off that
  handshake), so the header signs the person in; without it the page is read-only; and with
  ``SPECVIZ_AUTH_HEADER`` unset the same header is ignored (the local user saves, not the e-mail it names).

The library is checked in this process (:mod:`specviz.data.store` on the server's SQLite file).

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import re
import threading
import time
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

import pytest
from _browser import CHROMIUM, VIEWPORT, ServerError, browser_fixture, streamlit_server
from playwright.sync_api import expect
from test_browser import RUN_TIMEOUT_MS, assert_no_exception, open_page, wait_drawn

from specviz.base import access
from specviz.data import measurements, store

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

oidc_provider_mock = pytest.importorskip("oidc_provider_mock", reason="needs oidc-provider-mock (requirements-dev.txt)")

VIEWER, EDITOR, ADMIN = "vi@example.com", "ed@example.com", "boss@example.com"
ROLES_ENV = {
    "SPECVIZ_ADMINS": ADMIN,
    "SPECVIZ_EDITORS": EDITOR,
    "SPECVIZ_DEFAULT_ROLE": "viewer",
    "SPECVIZ_HOSTED": "0",
}
HEADER = "X-Forwarded-Email"
TARGET = "meta-llama/Llama-3.1-8B-Instruct"
MAIN, SIDEBAR = '[data-testid="stMain"]', '[data-testid="stSidebar"]'
PASTE = "…or paste text"  # the start of the paste box's label (key measured.paste)
TRASH_BUTTON = "Move the selected runs to the trash…"


def measurements_csv(label: str) -> str:
    """A small valid CSV of two rows labelled ``label`` (the run name the page proposes for it)."""
    return "label,k,mean_accepted_tokens,rounds,target_model,method\n" + "".join(
        f"{label},{k},{m},400,{TARGET},eagle3\n" for k, m in ((3, 2.6), (4, 2.9))
    )


@contextlib.contextmanager
def serve(tmp_path_factory, library: str, env: dict[str, str]) -> Iterator[str]:
    """``streamlit run app.py`` on ``library`` with ``env`` added; yields its base URL (http://127.0.0.1:port)."""
    log_path = tmp_path_factory.mktemp("streamlit") / "server.log"
    try:
        with streamlit_server("app.py", log_path, env={"SPECVIZ_DB_URL": library, **env}) as url:
            yield url
    except ServerError as exc:
        pytest.fail(str(exc))


def no_secrets(tmp_path_factory) -> str:
    """An empty secrets.toml: the server reads no ``[auth]`` (whatever ~/.streamlit holds)."""
    path = tmp_path_factory.mktemp("no-secrets") / "secrets.toml"
    path.write_text("", encoding="utf-8")
    return str(path)


def eventually(check, what: str, timeout_s: float = RUN_TIMEOUT_MS / 1000):
    """``check()`` once it is truthy (the server commits after the page shows the change), else fail."""
    deadline = time.monotonic() + timeout_s
    while not (result := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout_s} s: {what}")
        time.sleep(0.25)
    return result


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """oidc-provider-mock on 127.0.0.1 (any client id and secret are accepted; no registration); yields its
    URL. Its users have their e-mail as ``sub`` and as the ``email`` claim."""
    import werkzeug.serving

    users = [
        oidc_provider_mock.User(sub=e, claims={"email": e, "email_verified": True}) for e in (VIEWER, EDITOR, ADMIN)
    ]
    server = werkzeug.serving.make_server("127.0.0.1", 0, oidc_provider_mock.app(user_claims=users), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


@pytest.fixture(scope="module")
def oidc_app(tmp_path_factory, provider):
    """The app with ``[auth]`` pointing at ``provider``, on a library holding one run the editor saved;
    yields (base URL as the browser uses it: ``localhost``, the redirect URI's host; the library; the run's id)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('library') / 'runs.sqlite'}"
    library = store.open_library(url)
    frame, _ = measurements.load_measurements(measurements_csv("editor seed"))
    seed = store.save_run(
        library, frame, label="editor seed", source="test", who=access.Identity(EDITOR, "editor", "oidc")
    )
    secrets = tmp_path_factory.mktemp("secrets") / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        'redirect_uri = "http://localhost:{port}/oauth2callback"\n'  # Streamlit fills in its --server.port
        'cookie_secret = "specviz-browser-test-cookie-secret-0123456789"\n'
        'client_id = "specviz-test"\n'
        'client_secret = "specviz-test-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    env = {**ROLES_ENV, "STREAMLIT_SECRETS_FILES": str(secrets), "SPECVIZ_AUTH_HEADER": ""}
    with serve(tmp_path_factory, url, env) as base:
        yield base.replace("//127.0.0.1:", "//localhost:"), library, seed


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@contextlib.contextmanager
def new_page(browser):
    """A page in a fresh context (its own cookies: one person)."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def _requests(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: Mapping[str, str]) -> None:
    """Forward each request of a connection with ``headers`` set (a client's own values of them dropped); after
    an upgrade (the WebSocket) or a chunked body, the bytes as they come."""
    names = {name.lower().encode() for name in headers}
    added = [f"{name}: {value}".encode() for name, value in headers.items()]
    try:
        while True:
            first, *lines = (await reader.readuntil(b"\r\n\r\n"))[:-4].split(b"\r\n")
            lines = [line for line in lines if line.split(b":", 1)[0].strip().lower() not in names]
            fields = {k.strip().lower(): v.strip().lower() for k, _, v in (line.partition(b":") for line in lines)}
            writer.write(b"\r\n".join([first, *lines, *added]) + b"\r\n\r\n")
            if length := int(fields.get(b"content-length", 0)):
                writer.write(await reader.readexactly(length))
            await writer.drain()
            if b"upgrade" in fields or b"chunked" in fields.get(b"transfer-encoding", b""):
                return await _pipe(reader, writer)
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


@contextlib.contextmanager
def header_proxy(upstream: str, headers: Mapping[str, str]) -> Iterator[str]:
    """A reverse proxy on 127.0.0.1 in front of ``upstream`` that sets ``headers`` on every request, as a
    trusted proxy (oauth2-proxy) does; yields its base URL."""
    target = urlsplit(upstream)
    loop = asyncio.new_event_loop()

    async def connection(client_r, client_w):
        try:
            up_r, up_w = await asyncio.open_connection(target.hostname, target.port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_requests(client_r, up_w, headers), _pipe(up_r, client_w))

    started: list[asyncio.Server] = []
    ready = threading.Event()

    def serve_forever() -> None:  # on its own thread: Playwright's sync API holds this thread's event loop
        asyncio.set_event_loop(loop)
        started.append(loop.run_until_complete(asyncio.start_server(connection, "127.0.0.1", 0)))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve_forever, daemon=True)
    thread.start()
    assert ready.wait(10), "the header proxy did not start"
    try:
        yield f"http://127.0.0.1:{started[0].sockets[0].getsockname()[1]}"
    finally:
        loop.call_soon_threadsafe(started[0].close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def sidebar_says(page, text: str) -> None:
    expect(page.locator(SIDEBAR).get_by_text(text, exact=True)).to_be_visible(timeout=RUN_TIMEOUT_MS)


def sign_in(page, base: str, provider: str, email: str, role: str) -> None:
    """Run library → the sidebar's Sign in → the provider's form (``email`` as sub) → back, signed in."""
    open_page(page, f"{base}/run-library")
    expect(page.locator(SIDEBAR).get_by_text("Not signed in", exact=False)).to_be_visible()
    page.locator(SIDEBAR).get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{provider}/oauth2/authorize?**", timeout=RUN_TIMEOUT_MS)
    page.locator('input[name="sub"]').fill(email)
    page.get_by_role("button", name="Authorize", exact=True).click()
    page.wait_for_url(f"{base}/**", timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    sidebar_says(page, f"Signed in as {email} ({role})")
    expect(page.locator(SIDEBAR).get_by_role("button", name="Sign out")).to_be_visible()


def paste(page, text: str) -> None:
    """Paste ``text`` into the paste box and wait for its preview (its title; the table below may hold the same words)."""
    box = page.get_by_label(PASTE, exact=False)
    box.fill(text)
    box.press("Control+Enter")
    expect(page.locator(MAIN).get_by_text("pasted text", exact=True).first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)


def expander(page, title: str):
    return page.locator(f'{MAIN} [data-testid="stExpander"]').filter(has_text=title)


def open_expander(page, title: str):
    """Open the expander ``title`` and wait until it has finished opening (what it holds is clickable)."""
    box = expander(page, title)
    box.locator("summary").click()
    box.locator("details[open]").wait_for()
    # A rerun may cancel the opening animation, and a cancelled animation's `finished` rejects (AbortError):
    # wait for every animation to settle, either way, then check the expander is still open once the run is drawn.
    box.evaluate("e => Promise.allSettled(e.getAnimations({subtree: true}).map(a => a.finished))")
    wait_drawn(page)
    box.locator("details[open]").wait_for()
    return box


def choose(page, scope, label: str, option: str) -> None:
    """Pick ``option`` in the multiselect labelled ``label`` inside ``scope``."""
    scope.locator('[data-testid="stMultiSelect"]').filter(has_text=label).locator("input").click()
    page.get_by_role("option", name=option).click()
    page.keyboard.press("Escape")
    wait_drawn(page)


def runs_of(library, owner: str, trash: bool = False) -> set[int]:
    runs = store.list_runs(library, trash=trash)
    return {int(i) for i in runs.loc[runs["created_by"] == owner, "id"]}


def test_a_viewer_signs_in_and_may_only_browse(oidc_app, provider, browser):
    base, library, seed = oidc_app
    with new_page(browser) as page:
        sign_in(page, base, provider, VIEWER, "viewer")
        open_page(page, f"{base}/run-library?runs={seed}")
        sidebar_says(page, f"Signed in as {VIEWER} (viewer)")  # the sign-in holds across page loads
        # the run is selected (its export is offered) but not trashable
        expect(page.get_by_role("button", name="Export the selected runs (CSV)")).to_be_visible()
        assert page.get_by_role("button", name=TRASH_BUTTON).count() == 0
        paste(page, measurements_csv("viewer paste"))
        why = page.locator(MAIN).get_by_text(
            re.compile(rf"save runs you need the editor role; you are viewer \({re.escape(VIEWER)}\)", re.I)
        )
        expect(why).to_be_visible()
        assert page.get_by_role("button", name="Save to library").count() == 0
        expect(expander(page, "Trash (0)")).to_be_visible()
        assert expander(page, "Audit trail").count() == 0
        assert_no_exception(page, "run-library, signed in as a viewer")
    assert set(store.list_runs(library)["id"]) == {seed}  # nothing saved, nothing moved


def test_an_editor_saves_and_trashes_then_an_admin_audits_and_purges(oidc_app, provider, browser):
    base, library, seed = oidc_app
    before = runs_of(library, EDITOR)
    with new_page(browser) as page:
        sign_in(page, base, provider, EDITOR, "editor")
        open_page(page, f"{base}/run-library")
        paste(page, measurements_csv("editor paste"))
        page.get_by_role("button", name="Save to library").click()
        expect(page.get_by_text(re.compile(r"Saved as run #\d+\."))).to_be_visible(timeout=RUN_TIMEOUT_MS)
        new = eventually(lambda: runs_of(library, EDITOR) - before, "the editor's run is in the library")
        assert len(new) == 1, new
        (run_id,) = new
        row = store.list_runs(library).set_index("id").loc[run_id]
        assert (row["label"], row["created_by"]) == ("editor paste", EDITOR)
        wait_drawn(page)
        assert expander(page, "Audit trail").count() == 0
        # the saved run is selected: move it to the trash
        page.get_by_role("button", name=TRASH_BUTTON).click()
        page.get_by_role("button", name="Yes, move to the trash").click()
        eventually(lambda: run_id in runs_of(library, EDITOR, trash=True), "the editor's run is in the trash")
        wait_drawn(page)
        expect(expander(page, "Trash (1)")).to_be_visible()
        assert expander(page, "Audit trail").count() == 0
        assert_no_exception(page, "run-library, signed in as an editor")
    assert seed in set(store.list_runs(library)["id"])  # the seeded run was not touched

    with new_page(browser) as page:
        sign_in(page, base, provider, ADMIN, "admin")
        open_page(page, f"{base}/run-library")
        audit = open_expander(page, "Audit trail")
        with page.expect_download() as download:
            audit.get_by_role("button", name="Download the audit trail (CSV)").click()
        trail = list(csv.DictReader(io.StringIO(download.value.path().read_text(encoding="utf-8-sig"))))
        done = {(r["who"], r["role"], r["action"], r["runs"], r["page"]) for r in trail}
        for action in ("save", "trash"):
            assert (EDITOR, "editor", action, str(run_id), "run-library") in done, trail
        trash = open_expander(page, "Trash (1)")
        choose(page, trash, "Runs in the trash", f"#{run_id} editor paste")
        trash.get_by_role("button", name="Purge for good…").click()
        trash.get_by_role("button", name="Yes, purge").click()
        eventually(lambda: run_id not in set(store.list_runs(library, trash=True)["id"]), "the run is purged")
        wait_drawn(page)
        expect(expander(page, "Trash (0)")).to_be_visible()
        assert_no_exception(page, "run-library, signed in as an admin")
    assert run_id not in set(store.list_runs(library)["id"])
    purged = store.audit_trail(library, who=access.Identity(ADMIN, "admin", "oidc"))
    assert ((purged["who"] == ADMIN) & (purged["action"] == "purge") & (purged["runs"] == str(run_id))).any(), purged


@pytest.fixture(scope="module")
def header_app(tmp_path_factory):
    """The app behind a (pretend) proxy: ``SPECVIZ_AUTH_HEADER=X-Forwarded-Email``, no OpenID Connect."""
    url = f"sqlite:///{tmp_path_factory.mktemp('library') / 'runs.sqlite'}"
    env = {**ROLES_ENV, "SPECVIZ_AUTH_HEADER": HEADER, "STREAMLIT_SECRETS_FILES": no_secrets(tmp_path_factory)}
    with serve(tmp_path_factory, url, env) as base:
        yield base, store.open_library(url)


@pytest.fixture(scope="module")
def no_header_app(tmp_path_factory):
    """The app on one's own machine: no ``SPECVIZ_AUTH_HEADER``, no OpenID Connect, not hosted."""
    url = f"sqlite:///{tmp_path_factory.mktemp('library') / 'runs.sqlite'}"
    env = {**ROLES_ENV, "SPECVIZ_AUTH_HEADER": "", "STREAMLIT_SECRETS_FILES": no_secrets(tmp_path_factory)}
    with serve(tmp_path_factory, url, env) as base:
        yield base, store.open_library(url)


def save_pasted(page, label: str) -> None:
    paste(page, measurements_csv(label))
    page.get_by_role("button", name="Save to library").click()
    expect(page.get_by_text(re.compile(r"Saved as run #\d+\."))).to_be_visible(timeout=RUN_TIMEOUT_MS)


def test_the_proxy_header_signs_the_editor_in(header_app, browser):
    base, library = header_app
    with header_proxy(base, {HEADER: EDITOR}) as front, new_page(browser) as page:
        open_page(page, f"{front}/run-library")
        sidebar_says(page, f"Signed in as {EDITOR} (editor)")
        assert page.locator(SIDEBAR).get_by_role("button", name="Sign in").count() == 0
        save_pasted(page, "proxy paste")
        assert_no_exception(page, "run-library, signed in by the proxy header")
    eventually(lambda: runs_of(library, EDITOR), "the run saved through the proxy header is the editor's")


def test_without_the_proxy_header_the_page_is_read_only(header_app, browser):
    base, _ = header_app
    with new_page(browser) as page:
        open_page(page, f"{base}/run-library")
        expect(page.locator(MAIN).get_by_text("Sign in to save runs.").first).to_be_visible()
        assert page.locator(SIDEBAR).get_by_text("Signed in as", exact=False).count() == 0
        paste(page, measurements_csv("anonymous paste"))
        assert page.get_by_role("button", name="Save to library").count() == 0
        assert_no_exception(page, "run-library without the proxy header")


def test_a_client_sent_header_is_ignored_where_no_proxy_is_configured(no_header_app, browser):
    base, library = no_header_app
    with header_proxy(base, {HEADER: ADMIN}) as front, new_page(browser) as page:
        open_page(page, f"{front}/run-library")
        assert page.locator(SIDEBAR).get_by_text("Signed in as", exact=False).count() == 0
        save_pasted(page, "local paste")  # the local user (every right on their own machine) saves
        wait_drawn(page)
        assert expander(page, "Audit trail").count() == 0  # an admin would see it; the local user does not
        assert_no_exception(page, "run-library with a client-sent header and no proxy configured")
    eventually(lambda: runs_of(library, ""), "the run is the local user's")
    assert not runs_of(library, ADMIN)
