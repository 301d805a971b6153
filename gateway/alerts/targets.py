"""Where a webhook may point: never at the gateway's own network (loopback, link-local, private, unique-local,
shared or cloud-metadata addresses), which a receiver URL would otherwise let an admin-key holder reach from
the gateway's position. Checked twice: at creation, on the name as it resolves then (a name that does not
resolve yet is accepted), and at every delivery, whose connection goes to the very address that was checked
(a name that re-resolves elsewhere between check and connect gains nothing)."""
from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the addresses it resolves to; raises OSError when it does not resolve.
Resolve = Callable[[str, int], Awaitable[list[str]]]

# Named beyond what `is_global` already refuses, so the error says what the address is.
METADATA = {ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200",
                                              "fd00:ec2::254")}
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: a provider's internal network
NAT64 = ipaddress.ip_network("64:ff9b::/96")
LOCAL_NAMES = ("localhost", "localhost.localdomain")


class UnsafeTarget(ValueError):
    """The URL's host is, or resolves to, an address a webhook may not reach; the message says which."""


def refusal(ip: IP) -> str | None:
    """Why a webhook may not reach `ip` ("loopback", "private"...), or None when it may."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (
            ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in NAT64 else None)
        if embedded is not None:
            return refusal(embedded)
    if ip in METADATA:
        return "cloud metadata"
    for why, test in (("loopback", ip.is_loopback), ("link-local", ip.is_link_local),
                      ("unspecified", ip.is_unspecified), ("multicast", ip.is_multicast),
                      ("reserved", ip.is_reserved)):
        if test:
            return why
    if isinstance(ip, ipaddress.IPv6Address) and ip in ipaddress.ip_network("fc00::/7"):
        return "unique-local"
    if isinstance(ip, ipaddress.IPv4Address) and ip in SHARED:
        return "shared (carrier-grade NAT)"
    if ip.is_private:
        return "private"
    if not ip.is_global:
        return "reserved"
    return None


def host_and_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if not parts.hostname:
        raise UnsafeTarget("the URL has no host")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def literal(host: str) -> IP | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _check(host: str, addresses: list[str]) -> list[IP]:
    ips = [ipaddress.ip_address(a.split("%", 1)[0]) for a in addresses]  # "fe80::1%eth0": the scope dropped
    for ip in ips:
        why = refusal(ip)
        if why is not None:
            shown = host if literal(host) is not None else f"{host} ({ip})"
            raise UnsafeTarget(f"webhook URLs may not point at a {why} address: {shown}")
    return ips


async def system_resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


@dataclass(frozen=True, slots=True)
class Pinned:
    """A delivery's connection: the checked address to connect to, and the name the receiver expects (the
    Host header and TLS server name)."""
    url: str  # the webhook's URL with its host replaced by the address
    host_header: str
    server_name: str


@dataclass(slots=True)
class TargetPolicy:
    """`allow_private` (TOLLGATE_WEBHOOKS_ALLOW_PRIVATE): on-premises receivers on the gateway's own network."""
    allow_private: bool = False
    resolve: Resolve = system_resolve
    resolve_timeout_s: float = 3.0

    def check_new(self, url: str) -> None:
        """At creation (a sync admin route): refuse a host that is, or now resolves to, a forbidden address.
        A name that does not resolve (yet, or not from here) is accepted: every delivery checks it again."""
        if self.allow_private:
            return
        host, port = host_and_port(url)
        if host.lower().rstrip(".") in LOCAL_NAMES or host.lower().rstrip(".").endswith(".localhost"):
            raise UnsafeTarget(f"webhook URLs may not point at a loopback address: {host}")
        if literal(host) is not None:
            _check(host, [host])
            return
        try:
            addresses = self._resolve_blocking(host, port)
        except (OSError, UnicodeError, FutureTimeout):
            return
        _check(host, addresses)

    async def pin(self, url: str) -> Pinned | None:
        """At delivery: resolve, check every address, and connect to the first. None when private targets are
        allowed (the URL is used as it is). Raises UnsafeTarget, or OSError when the name does not resolve."""
        if self.allow_private:
            return None
        host, port = host_and_port(url)
        if literal(host) is not None:
            (ip,) = _check(host, [host])
        else:
            async with asyncio.timeout(self.resolve_timeout_s):
                addresses = await self.resolve(host, port)
            if not addresses:
                raise OSError(f"{host} resolves to no address")
            ip = _check(host, addresses)[0]
        netloc = urlsplit(url).netloc.rsplit("@", 1)[-1]  # host[:port], never credentials
        return Pinned(url=_with_host(url, str(ip)), host_header=netloc, server_name=host)

    def _resolve_blocking(self, host: str, port: int) -> list[str]:
        """Bounded: a resolver that hangs costs the admin request `resolve_timeout_s`, its thread ends later."""
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webhook-dns")
        try:
            return pool.submit(asyncio.run, self.resolve(host, port)).result(timeout=self.resolve_timeout_s)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def _with_host(url: str, ip: str) -> str:
    """httpx's URL brackets an IPv6 address and keeps the port, path and query."""
    return str(httpx.URL(url).copy_with(host=ip))
