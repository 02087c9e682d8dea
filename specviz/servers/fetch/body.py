"""A fetched answer's body: read as it arrives, inflated a step at a time, capped, cut into lines, decoded as text.

Inflated bytes count against ``max_bytes`` a step at a time, so a gzip bomb is cut at the cap; encodings not
asked for are refused; a charset that names no text codec reads as UTF-8.
"""

from __future__ import annotations

import codecs
import json
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from specviz.servers.fetch.errors import FetchError, _snippet
from specviz.servers.fetch.hosts import _shown

if TYPE_CHECKING:
    from specviz.servers.fetch.deadline import _Budget
    from specviz.servers.fetch.policy import FetchPolicy

ACCEPT_ENCODING = "gzip, deflate"  #: the content encodings fetch reads (and asks for)
_INFLATE_STEP = 64 * 2**10  #: most bytes one inflate step produces (so a bomb is cut at the cap, not after)
_MAX_ENCODINGS = 3  #: most Content-Encoding layers read (``gzip, gzip``); more are refused
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}
#: Python codec names (``codecs.lookup(...).name``) a body's charset may select; anything else reads as UTF-8.
_TEXT_CODECS = re.compile(
    r"utf-8(-sig)?|utf-(16|32)(-[lb]e)?|ascii|iso8859-\d+|cp\d+|koi8-[ru]|mac-roman"
    r"|gb2312|gbk|gb18030|big5(hkscs)?|shift_jis|cp932|euc_(jp|kr)|iso2022_jp"
)


@dataclass(frozen=True)
class Fetched:
    """One fetched answer (status < 400), its body read in full (at most the policy's ``max_bytes``)."""

    status: int
    reason: str  #: the HTTP reason phrase ("OK")
    headers: Mapping[str, str]  #: lower-case names; repeated headers joined by ", "
    body: bytes  #: decoded from its Content-Encoding (gzip, deflate)
    url: str  #: the final URL, after redirects
    elapsed_s: float  #: from sending the first request to the end of the last body, redirects included
    encoding: str = "utf-8"  #: the charset of Content-Type, else UTF-8

    @property
    def text(self) -> str:
        """The body as text (undecodable bytes replaced; UTF-8 where the charset names no text codec)."""
        return _decode(self.body, self.encoding)

    def json(self) -> Any:
        """The body parsed as JSON; FetchError quoting its start when it is not JSON (or nested too deep to read)."""
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):  # RecursionError: [[[[…]]]] nested deeper than Python recurses
            raise FetchError(
                "the answer from {url} is not JSON: {snippet!r}", url=self.url, snippet=_snippet(self.text)
            ) from None


def text_codec(charset: str | None) -> str:
    """``charset`` when it is a text codec of :data:`_TEXT_CODECS`, else UTF-8.

    Not any Python codec: ``base64`` raises, ``idna`` refuses ``errors="replace"``, ``punycode`` is quadratic.
    """
    try:
        name = codecs.lookup(charset.strip()).name if charset else "utf-8"
    except (LookupError, ValueError):
        return "utf-8"
    return name if _TEXT_CODECS.fullmatch(name) else "utf-8"


def _decode(body: bytes, encoding: str | None) -> str:
    """``body`` as text in ``text_codec(encoding)``, undecodable bytes replaced."""
    return body.decode(text_codec(encoding), errors="replace")


def _encodings(response: httpx.Response) -> list[str]:
    """The Content-Encoding layers to undo, last applied first; FetchError for another encoding or too many."""
    listed = [e.strip().lower() for e in response.headers.get_list("content-encoding", split_commas=True)]
    layers = [e for e in listed if e and e != "identity"]
    unknown = [e for e in layers if e not in _WBITS]
    shown = ", ".join(listed)
    if unknown:
        raise FetchError(
            "cannot fetch {url}: the answer is in Content-Encoding {encoding!r}; only {read} are read",
            url=_shown(response.url),
            encoding=shown,
            read=ACCEPT_ENCODING,
        )
    if len(layers) > _MAX_ENCODINGS:
        raise FetchError(
            "cannot fetch {url}: the answer is in Content-Encoding {encoding!r}; at most {most} layers are read",
            url=_shown(response.url),
            encoding=shown,
            most=_MAX_ENCODINGS,
        )
    return layers[::-1]


def _inflate(chunks: Iterator[bytes], encoding: str) -> Iterator[bytes]:
    """``chunks`` of a gzip or deflate stream, inflated at most :data:`_INFLATE_STEP` bytes at a time.

    Like httpx: ``deflate`` is read with the zlib header, else raw, and a truncated stream ends where it
    ends. Unlike httpx, gzip members after the first are read too, and no step returns more than a step.
    """
    wbits = _WBITS[encoding]
    inflater, first = zlib.decompressobj(wbits), True
    for data in chunks:
        while data:
            try:
                out = inflater.decompress(data, _INFLATE_STEP)
            except zlib.error:
                if encoding != "deflate" or not first:
                    raise
                wbits = -zlib.MAX_WBITS  # deflate without the zlib header, as some servers send it
                inflater = zlib.decompressobj(wbits)
                out = inflater.decompress(data, _INFLATE_STEP)
            first = False
            if out:
                yield out
            data = inflater.unconsumed_tail
            while not data and len(out) == _INFLATE_STEP and not inflater.eof:  # all input in, output waiting
                out = inflater.decompress(b"", _INFLATE_STEP)
                if out:
                    yield out
            if inflater.eof:
                if encoding == "deflate":
                    return  # bytes after the stream are ignored
                data = inflater.unused_data  # another gzip member may follow
                inflater = zlib.decompressobj(wbits)
    tail = inflater.flush()
    if tail:
        yield tail


def _chunks(response: httpx.Response, policy: FetchPolicy, budget: _Budget) -> Iterator[bytes]:
    """The decoded body as it arrives; FetchError past ``policy.max_bytes`` (a Content-Length over it: before
    reading), httpx.ReadTimeout once the fetch's total time is up."""
    limit = policy.max_bytes

    def too_large() -> FetchError:
        return FetchError(
            "cannot fetch {url}: the response is larger than {limit} bytes (the limit); is this the right endpoint?",
            url=_shown(response.url),
            limit=limit,
        )

    if response.is_stream_consumed:  # an answer made in memory (a MockTransport's): httpx has decoded it
        layers, stream = [], iter([response.content])
    else:
        layers = _encodings(response)
        stream = response.iter_raw()
        for encoding in layers:
            stream = _inflate(stream, encoding)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit and not layers:
        raise too_large()
    size = 0
    try:
        for chunk in stream:
            size += len(chunk)
            if size > limit:
                raise too_large()
            if budget.left() <= 0:  # also where the transport does not bound each read (an injected client)
                budget.expired = True
                raise httpx.ReadTimeout("the fetch's total time is up")
            yield chunk
    except zlib.error as exc:
        raise httpx.DecodingError(f"{', '.join(reversed(layers))}: {exc}") from None


def _read_body(response: httpx.Response, policy: FetchPolicy, budget: _Budget) -> bytes:
    """The whole body (:func:`_chunks`)."""
    return b"".join(_chunks(response, policy, budget))


class _Lines:
    """Cuts a byte stream into lines (LF or CRLF dropped) for ``on_line``; a chunk without LF is not rescanned."""

    def __init__(self, on_line: Callable[[bytes], None]) -> None:
        self._on_line = on_line
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        if b"\n" not in chunk:
            return
        *lines, rest = self._buffer.split(b"\n")
        self._buffer = bytearray(rest)
        for line in lines:
            self._on_line(bytes(line).removesuffix(b"\r"))

    def close(self) -> None:
        """Hand on the last line when the stream ended without a newline."""
        if self._buffer:
            line, self._buffer = bytes(self._buffer).removesuffix(b"\r"), bytearray()
            self._on_line(line)
