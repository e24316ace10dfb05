"""The outbound URL policy: nothing a user types makes the service call an internal address.

Every outbound HTTP client of the service goes through this module: the model providers,
the coin pool, the live market source and the exchange URL overrides. A URL's host is
resolved and every address it resolves to must be a global unicast address; loopback,
private, link-local, multicast, reserved, unspecified and other non-global addresses
(also written as IPv4-mapped IPv6) are refused, unless the operator allow-lists them in
``OUTBOUND_ALLOWED_ADDRESSES``: networks or addresses, each optionally with a port
(``127.0.0.1:11434`` for a local Ollama, ``10.0.0.0/8``, ``[::1]:8000``). The embedded
default and the test settings allow loopback; production allows nothing by default.

The check runs twice: when a URL is saved (``check_url``: the service answers a 400
naming the field), and again for every connection (``GuardedBackend``, the network
backend of the httpx clients), which resolves the host itself, checks each address and
connects to a checked one. So a DNS answer that changed after the save (DNS rebinding)
is refused as well, and a redirect (which the clients follow to the same host only, or
not at all) cannot lead anywhere the policy forbids.

A URL a user types (a model's base URL, a coin pool's) is also refused at save when it
carries a user name or password (``check_no_user_info``): it is stored and shown as typed.

Name resolution goes through ``resolver``; ``use_resolver`` swaps it for a test's own.
A connection's resolution waits no longer than the connection's timeout (a model call's
deadline): a resolver that hangs does not hold the calling worker past it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import ipaddress
import re
import socket
import ssl
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError

from arena.patterns import WHITESPACE, either_case, integer_at_most

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]
DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundRefused(Exception):
    """A URL the policy forbids calling; the message says why, in words fit for a user."""


class Unresolvable(OSError):
    """A host name that does not resolve (now): there is nothing to connect to."""


def system_resolver(host: str, port: int) -> list[str]:
    """Return the addresses ``host`` resolves to (A and AAAA), as the system resolves them."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


resolver: Resolver = system_resolver


@contextlib.contextmanager
def use_resolver(replacement: Resolver) -> Iterator[None]:
    """Resolve names with ``replacement`` inside the block (tests: a DNS answer that
    changes between the save and the call)."""
    global resolver
    previous, resolver = resolver, replacement
    try:
        yield
    finally:
        resolver = previous


@dataclass(frozen=True)
class Allowed:
    """One allow-list entry: a network, and the one port it is allowed on (None: any)."""

    network: IPNetwork
    port: int | None

    def admits(self, address: IPAddress, port: int) -> bool:
        return address in self.network and self.port in (None, port)


def parse_allowed(entry: str) -> Allowed:
    """Return the allow-list entry written as ``network[:port]`` (IPv6 in brackets with a
    port: ``[::1]:8000``); raise ``ValueError`` for anything else."""
    text, port = entry.strip(), None
    if text.startswith("["):
        address, bracket, rest = text[1:].partition("]")
        if not bracket:
            raise ValueError(f"no closing bracket in {entry!r}")
        if rest:
            port = int(rest.removeprefix(":"))
        text = address
    elif text.count(":") == 1:
        text, port_text = text.split(":")
        port = int(port_text)
    return Allowed(ipaddress.ip_network(text, strict=False), port)


@functools.cache
def _allowed(entries: tuple[str, ...]) -> tuple[Allowed, ...]:
    return tuple(parse_allowed(entry) for entry in entries)


def allow_list() -> tuple[Allowed, ...]:
    """Return the operator's allow-list (``OUTBOUND_ALLOWED_ADDRESSES``)."""
    return _allowed(tuple(settings.OUTBOUND_ALLOWED_ADDRESSES))


def address_class(address: IPAddress) -> str | None:
    """Return why ``address`` is internal (``loopback``, ``private``, ...), or None when
    it is a global unicast address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("not globally routable", not address.is_global),
    )
    return next((name for name, matches in checks if matches), None)


def check_address(address: str, port: int, host: str) -> IPAddress:
    """Return ``address`` if the policy lets ``host`` be reached there on ``port``; raise
    ``OutboundRefused`` otherwise."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    kind = address_class(ip)
    if kind is None or any(entry.admits(ip, port) for entry in allow_list()):
        return ip
    # The address a name resolved to is not repeated: it may be the internal network's.
    where = f"{host} is" if host == address else f"{host} resolves to"
    raise OutboundRefused(
        f"{where} a {kind} address; the service does not call internal addresses "
        "unless an operator allows them (OUTBOUND_ALLOWED_ADDRESSES)."
    )


# Resolutions run here, so a caller waits for one no longer than its timeout.
_resolving = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="resolve")


def _resolve(host: str, port: int, timeout: float | None) -> list[str]:
    if timeout is None:
        return resolver(host, port)
    try:
        return _resolving.submit(resolver, host, port).result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        raise httpcore.ConnectTimeout(f"resolving {host} took longer than {timeout:.1f}s") from None


def checked_addresses(host: str, port: int, *, timeout: float | None = None) -> list[IPAddress]:
    """Resolve ``host`` (within ``timeout`` seconds) and return its addresses if the policy
    allows every one of them; raise ``OutboundRefused`` when one is refused,
    ``Unresolvable`` when there is none."""
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        addresses = [host]
    except ValueError:
        try:
            addresses = _resolve(host, port, timeout)
        except (OSError, UnicodeError):
            addresses = []
    if not addresses:
        raise Unresolvable(f"the host {host} cannot be resolved")
    return [check_address(address, port, host) for address in addresses]


def url_origin(url: str) -> tuple[str, str, int]:
    """Return the scheme, host and port of an http(s) URL; ``ValueError`` if it has none."""
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"not an http or https URL: {url!r}")
    return parts.scheme, parts.hostname.lower(), parts.port or DEFAULT_PORTS[parts.scheme]


def check_url(url: str) -> None:
    """Raise ``OutboundRefused`` unless the policy lets the service call ``url`` (at save).

    A host that does not resolve now passes: there is nothing to refuse yet (an offline
    machine resolves nothing), and every connection is checked again when it is made.
    """
    try:
        _, host, port = url_origin(url)
    except ValueError:
        raise OutboundRefused("Must be an http or https URL.") from None
    with contextlib.suppress(Unresolvable):
        checked_addresses(host, port)


def check_no_user_info(url: str, *, instead: str = "") -> None:
    """Raise ``OutboundRefused`` if ``url`` carries user info (``user:password@``).

    A URL a user types is stored and shown as typed (in answers, the admin, logs and
    error messages), so a password in it would be in the clear; credentials belong in
    fields of their own, stored encrypted. ``instead`` says where (``put the key in
    api_key``).
    """
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return  # not a URL: the caller's URL check says so
    if "@" in netloc:
        advice = f"; {instead}" if instead else ""
        raise OutboundRefused(
            "Must not carry a user name or password (user:password@), which would be "
            f"stored and shown as typed{advice}."
        )


def _http_url_pattern() -> str:
    """Return the pattern (``arena.patterns``, no anchors) of a URL a user types: http or
    https, a host name, an IPv4 address or a bracketed IPv6 address, an optional port up
    to 65535, and a path, query or fragment without whitespace or NUL."""
    hexes, label = "[0-9A-Fa-f]{1,4}", "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
    ipv4 = rf"{octet}(?:\.{octet}){{3}}"
    ipv6 = "|".join(
        [
            f"(?:{hexes}:){{7}}{hexes}",
            *(
                f"(?:{hexes}:){{1,{before}}}(?::{hexes}){{1,{7 - before}}}"
                for before in range(1, 7)
            ),
            f"(?:{hexes}:){{1,7}}:",
            f":(?::{hexes}){{1,7}}",
            "::",
            f"::[Ff]{{4}}:{ipv4}",
        ]
    )
    port = integer_at_most(65535)
    rest = f"[^\\u0000{WHITESPACE}]*"
    return (
        f"{either_case('http')}[Ss]?://(?:{label}(?:\\.{label})*|\\[(?:{ipv6})\\])"
        f"(?::{port})?(?:[/?#]{rest})?"
    )


# A URL a user types (a model's base URL, a coin pool's), as the schema states it.
HTTP_URL = _http_url_pattern()
_HTTP_URL = re.compile(HTTP_URL)


class OutboundUrlValidator:
    """Refuse, at save, a URL the service may not call (a Django validator): one carrying
    a user name or password (``instead`` says where credentials go), one not of the form
    ``HTTP_URL``, one whose host resolves to an address the policy forbids
    (``check_url``)."""

    def __init__(self, *, instead: str = "") -> None:
        self.instead = instead

    def __call__(self, url: str) -> None:
        try:
            check_no_user_info(url, instead=self.instead)
            if not _HTTP_URL.fullmatch(url):
                raise DjangoValidationError("Must be an http or https URL.")
            check_url(url)
        except OutboundRefused as exc:
            raise DjangoValidationError(str(exc)) from None


class GuardedBackend(httpcore.NetworkBackend):
    """An httpcore network backend that connects only where the policy allows.

    It resolves the host itself and connects to the checked addresses, in order, so the
    answer checked is the answer used. TLS still verifies the certificate against the
    host name, which httpcore passes on separately.
    """

    def __init__(self, backend: httpcore.NetworkBackend | None = None) -> None:
        self._backend = backend or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = checked_addresses(host, port, timeout=timeout)
        except Unresolvable as exc:
            raise httpcore.ConnectError(str(exc)) from None
        failure: Exception | None = None
        for address in addresses:
            try:
                return self._backend.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure or httpcore.ConnectError(f"no address of {host} answered")

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        raise OutboundRefused("Unix sockets are not an outbound destination.")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def ccxt_session() -> Any:
    """Return a ``requests`` session for a ccxt exchange that follows no redirect.

    ccxt calls the exchanges' own hosts, or an operator's override of them, which is
    checked with ``check_url`` when the exchange is built; a redirect is then an error
    (ccxt raises ``ExchangeError``), never a way to another host.
    """
    import requests

    session = requests.Session()
    session.max_redirects = 0
    session.trust_env = False
    return session


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """Return the TLS context every outbound client shares (building one loads the CA
    bundle, tens of milliseconds)."""
    return httpx.create_ssl_context()


def guarded_transport(*, wrap: Callable[[Any], Any] | None = None) -> httpx.HTTPTransport:
    """Return an httpx transport whose every connection obeys the policy.

    ``wrap`` may wrap the guarded backend once more (the model client bounds each socket
    operation by its call's deadline).
    """
    transport = httpx.HTTPTransport(verify=ssl_context())
    # httpx builds its connection pool without a way to choose the network backend.
    backend = GuardedBackend(transport._pool._network_backend)
    transport._pool._network_backend = wrap(backend) if wrap is not None else backend
    return transport
