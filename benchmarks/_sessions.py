"""A browser tab without the browser: one Streamlit session driven over the server's WebSocket (for soak.py).

It speaks the protocol the Streamlit frontend speaks (``/_stcore/stream``, protobuf ``BackMsg`` /
``ForwardMsg``): it asks for a page with a query string, reads every element the script sends until the
run finishes, and uploads a file the way the frontend does (``file_urls_request``, an HTTP PUT to the
upload URL, then a rerun with the uploader's widget state). The server cannot tell it from a tab, so its
sessions, caches, uploads and memory are exercised as by people, at a fraction of a browser's CPU.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import httpx
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

FINISHED = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR}


@dataclass
class View:
    """What one script run sent: its time, exception boxes, file uploaders (id -> accepted types)."""

    seconds: float = 0.0
    exceptions: list[str] = field(default_factory=list)
    errors: int = 0  # st.error boxes: a refused link or file, said in words (expected with a hostile corpus)
    uploaders: dict[str, list[str]] = field(default_factory=dict)
    not_found: bool = False
    timed_out: bool = False


class Session:
    """One visitor's tab on the server at ``base`` (http://host:port)."""

    def __init__(self, base: str, timeout_s: float = 180.0):
        self.base, self.timeout_s = base, timeout_s
        self.ws = None
        self.session_id = ""
        self.query = ""  # the query string the page last mirrored into the address bar

    async def open(self) -> None:
        url = self.base.replace("http://", "ws://", 1) + "/_stcore/stream"
        self.ws = await websockets.connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=60)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None

    async def _next(self, deadline: float) -> ForwardMsg:
        raw = await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.monotonic()))
        msg = ForwardMsg()
        msg.ParseFromString(raw)
        return msg

    async def run(self, page: str, query: dict[str, str] | str, widgets: list[WidgetState] = ()) -> View:
        """Ask for ``page`` (its URL path; "" the home page) with ``query``; wait for the run's end."""
        back = BackMsg()
        back.rerun_script.query_string = query if isinstance(query, str) else urlencode(query)
        back.rerun_script.page_name = page
        back.rerun_script.widget_states.widgets.extend(widgets)
        self.query = back.rerun_script.query_string
        view, t0 = View(), time.perf_counter()
        deadline = time.monotonic() + self.timeout_s
        await self.ws.send(back.SerializeToString())
        try:
            while True:
                msg = await self._next(deadline)
                kind = msg.WhichOneof("type")
                if kind == "new_session":
                    self.session_id = msg.new_session.initialize.session_id or self.session_id
                elif kind == "page_info_changed":
                    self.query = msg.page_info_changed.query_string
                elif kind == "page_not_found":
                    view.not_found = True
                elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                    element = msg.delta.new_element
                    what = element.WhichOneof("type")
                    if what == "exception":
                        view.exceptions.append(f"{element.exception.type}: {element.exception.message}"[:300])
                    elif what == "alert" and element.alert.format == element.alert.ERROR:
                        view.errors += 1
                    elif what == "file_uploader":
                        view.uploaders[element.file_uploader.id] = list(element.file_uploader.type)
                elif kind == "script_finished" and msg.script_finished in FINISHED:
                    break
        except TimeoutError:
            view.timed_out = True
        view.seconds = time.perf_counter() - t0
        return view

    async def upload(self, page: str, uploader: str, name: str, data: bytes) -> View:
        """Upload ``data`` as ``name`` to the file uploader ``uploader`` of ``page``, as the frontend does."""
        back, request = BackMsg(), uuid.uuid4().hex
        back.file_urls_request.request_id = request
        back.file_urls_request.session_id = self.session_id
        back.file_urls_request.file_names.append(name)
        await self.ws.send(back.SerializeToString())
        deadline = time.monotonic() + self.timeout_s
        while True:
            msg = await self._next(deadline)
            if msg.WhichOneof("type") == "file_urls_response" and msg.file_urls_response.response_id == request:
                urls = msg.file_urls_response.file_urls[0]
                break
        target = urls.upload_url if urls.upload_url.startswith("http") else self.base + urls.upload_url
        async with httpx.AsyncClient(timeout=self.timeout_s) as client:
            response = await client.put(target, files={"file": (name, data, "application/octet-stream")})
        if response.status_code >= 400:  # refused before the page saw it (too large): nothing to rerun
            return View()
        state = WidgetState(id=uploader)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.file_id, info.name, info.size = urls.file_id, name, len(data)
        info.file_urls.CopyFrom(urls)
        return await self.run(page, self.query, [state])


def rss_mb(pid: int) -> float | None:
    """Resident memory of process ``pid`` and its children, in MB (None once it is gone)."""
    total, pids = 0, [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            if p == pid:
                return None
    return total * 1024 / 1e6


def server_pid(port: int) -> int:
    """The pid of the ``streamlit run`` listening on ``port`` (found by its command line)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(args) and str(port).encode() in args:
            return int(entry.name)
    raise RuntimeError(f"no streamlit process on port {port}")
