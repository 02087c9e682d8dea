"""The README's `streamlit run app.py` listens on loopback only; hosting for others takes a flag."""

from __future__ import annotations

import socket
import tomllib

import pytest

from tests._browser import ROOT, streamlit_server


def outside_address() -> str | None:
    """This machine's IPv4 address on its default route (no packet is sent), or None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the interface
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def answers(host: str, port: int) -> bool:
    """True when a TCP connection to host:port is accepted."""
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def test_the_shipped_config_listens_on_loopback():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"


@pytest.mark.slow
def test_the_started_app_is_not_reachable_from_another_interface(tmp_path):
    """Started as the README says, the app answers on 127.0.0.1 and refuses this machine's outside address."""
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to try")
    with streamlit_server(ROOT / "app.py", tmp_path / "server.log") as url:
        port = int(url.rsplit(":", 1)[1])
        assert answers("127.0.0.1", port)
        assert not answers(address, port), f"the app answered on {address}:{port}"
