"""Fetching a URL a person typed within the deployment's rules against server-side request forgery."""

from specviz.servers.fetch.body import ACCEPT_ENCODING, Fetched, text_codec
from specviz.servers.fetch.client import fetch, fetch_stream
from specviz.servers.fetch.deadline import make_client, timeouts
from specviz.servers.fetch.errors import FetchError
from specviz.servers.fetch.hosts import DEFAULT_PORTS, ENV_HOSTS, format_host_entry, parse_host_entry
from specviz.servers.fetch.policy import FIELD, FetchPolicy, check_url, policy_from_env

__all__ = [
    "ACCEPT_ENCODING",
    "DEFAULT_PORTS",
    "ENV_HOSTS",
    "FIELD",
    "FetchError",
    "FetchPolicy",
    "Fetched",
    "check_url",
    "fetch",
    "fetch_stream",
    "format_host_entry",
    "make_client",
    "parse_host_entry",
    "policy_from_env",
    "text_codec",
    "timeouts",
]
