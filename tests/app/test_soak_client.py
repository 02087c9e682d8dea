"""benchmarks/_sessions.py, the soak's WebSocket visitor, against a real ``streamlit run``: it sees an exception
box where a script raises, an error box where it reports one, and its upload reaches the file uploader."""

from __future__ import annotations

import asyncio
import sys

import pytest
from _browser import ROOT, streamlit_server

sys.path.insert(0, str(ROOT / "benchmarks"))
from _sessions import Session, rss_mb, server_pid

pytestmark = pytest.mark.slow

APP = """
import streamlit as st
if st.query_params.get("boom") == "1":
    raise ValueError("boom")
up = st.file_uploader("file", type=["csv"], key="up")
if up is not None:
    st.error(f"got {up.name}: {len(up.getvalue())} bytes")
"""


def test_a_session_sees_exceptions_errors_and_uploads(tmp_path):
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    env = {"STREAMLIT_SERVER_ENABLE_XSRF_PROTECTION": "false"}
    with streamlit_server(tmp_path / "app.py", tmp_path / "log", cwd=tmp_path, env=env) as base:
        pid = server_pid(int(base.rsplit(":", 1)[1]))
        assert rss_mb(pid) > 10

        async def visit():
            session = Session(base, timeout_s=60)
            await session.open()
            boom = await session.run("", {"boom": "1"})
            calm = await session.run("", {})
            uploaded = await session.upload("", next(iter(calm.uploaders)), "x.csv", b"a,b\n1,2\n")
            await session.close()
            return boom, calm, uploaded

        boom, calm, uploaded = asyncio.run(visit())
    assert [e.split(":")[0] for e in boom.exceptions] == ["ValueError"] and not boom.timed_out
    assert not calm.exceptions and list(calm.uploaders.values()) == [[".csv"]]
    assert uploaded.errors == 1 and not uploaded.exceptions  # the page read the 8 bytes uploaded
