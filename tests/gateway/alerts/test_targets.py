"""Where a webhook may point: the address checks, the check at creation (a name that does not resolve is
accepted), and the check at delivery that connects to the address it checked, keeps the receiver's name on
the Host header and TLS server name, follows no redirect and keeps no response body."""
import ipaddress

import httpx
import pytest

from gateway.alerts.outbox import Claimed
from gateway.alerts.sender import send
from gateway.alerts.targets import TargetPolicy, UnsafeTarget, refusal


def resolver(table: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"{host}: Name or service not known")
        return table[host]
    return resolve


@pytest.mark.parametrize("address,why", [
    ("127.0.0.1", "loopback"), ("127.9.9.9", "loopback"), ("::1", "loopback"),
    ("169.254.169.254", "cloud metadata"), ("fd00:ec2::254", "cloud metadata"), ("100.100.100.200", "cloud metadata"),
    ("169.254.1.1", "link-local"), ("fe80::1", "link-local"),
    ("10.0.0.1", "private"), ("172.16.5.4", "private"), ("192.168.1.1", "private"),
    ("fc00::1", "unique-local"), ("fd12:3456::1", "unique-local"),
    ("100.64.0.1", "shared (carrier-grade NAT)"), ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("224.0.0.1", "multicast"), ("240.0.0.1", "reserved"),
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"),  # IPv4 inside IPv6
    ("64:ff9b::a9fe:a9fe", "cloud metadata"), ("2002:0a00:0001::", "private"),  # NAT64, 6to4
])
def test_internal_addresses_are_refused_with_what_they_are(address, why):
    assert refusal(ipaddress.ip_address(address)) == why


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:2800:220:1:248:1893:25c8:1946"])
def test_public_addresses_are_allowed(address):
    assert refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/x", "http://[::1]/x", "http://169.254.169.254/latest",
                                 "https://10.0.0.1/hook", "http://localhost:9000/", "http://LocalHost./",
                                 "http://db.localhost/", "http://[::ffff:169.254.169.254]/"])
def test_creation_refuses_internal_literals_and_local_names(url):
    with pytest.raises(UnsafeTarget):
        TargetPolicy(resolve=resolver({})).check_new(url)


def test_creation_checks_what_a_name_resolves_to_and_accepts_one_that_does_not_resolve():
    policy = TargetPolicy(resolve=resolver({"internal.corp": ["93.184.216.34", "10.1.2.3"],
                                            "hooks.example.com": ["93.184.216.34"]}))
    with pytest.raises(UnsafeTarget, match=r"private address: internal\.corp \(10\.1\.2\.3\)"):
        policy.check_new("https://internal.corp/hook")
    policy.check_new("https://hooks.example.com/hook")
    policy.check_new("https://not-yet-registered.example/hook")  # checked again at every delivery


def test_allow_private_lifts_the_check():
    TargetPolicy(allow_private=True).check_new("http://127.0.0.1:8080/x")
    TargetPolicy(allow_private=True).check_new("http://10.0.0.1/x")


class Recorder:
    """A stand-in receiver: records each request as the transport is handed it, answers `status` with a body."""

    def __init__(self, status: int = 200, headers: dict | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.status, self.headers = status, headers or {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.status, headers=self.headers, content=b"internal detail: db password=hunter2")


def delivery(url: str) -> Claimed:
    return Claimed(id="evt_1", webhook_id="wh_1", url=url, secret="sealed", secret_sealed=True, event_type="ping",
                   body='{"id":"evt_1"}', attempts=0)


async def deliver(url: str, table: dict[str, list[str]], rx: Recorder, **policy):
    async with httpx.AsyncClient(transport=httpx.MockTransport(rx), follow_redirects=False) as client:
        return await send(client, delivery(url), secret="whsec-0123456789abcdef", timeout_s=2.0,
                          policy=TargetPolicy(resolve=resolver(table), **policy))


async def test_a_delivery_connects_to_the_address_it_checked_under_the_receivers_name():
    rx = Recorder()
    out = await deliver("https://hooks.example.com:8443/in?x=1", {"hooks.example.com": ["93.184.216.34"]}, rx)
    assert out.ok and out.status_code == 200
    (sent,) = rx.requests
    assert (sent.url.host, sent.url.port, sent.url.raw_path) == ("93.184.216.34", 8443, b"/in?x=1")
    assert sent.headers["host"] == "hooks.example.com:8443"
    assert sent.extensions["sni_hostname"] == "hooks.example.com"


async def test_a_name_that_now_resolves_inside_is_blocked_and_nothing_is_sent():
    rx = Recorder()
    out = await deliver("https://hooks.example.com/in", {"hooks.example.com": ["169.254.169.254"]}, rx)
    assert not out.ok and out.status_code is None and rx.requests == []
    assert out.error == ("blocked: webhook URLs may not point at a cloud metadata address: "
                         "hooks.example.com (169.254.169.254)")
    out = await deliver("http://127.0.0.1:9/x", {}, rx)
    assert out.error.startswith("blocked: ") and rx.requests == []
    out = await deliver("https://gone.example/in", {}, rx)
    assert (out.ok, out.error) == (False, "DNS: the host did not resolve")


async def test_only_the_status_and_a_classification_are_kept_and_redirects_are_not_followed():
    table = {"hooks.example.com": ["93.184.216.34"]}
    out = await deliver("https://hooks.example.com/in", table, Recorder(500))
    assert (out.status_code, out.error) == (500, "HTTP 500: server error")
    rx = Recorder(302, {"location": "http://169.254.169.254/latest/meta-data"})
    out = await deliver("https://hooks.example.com/in", table, rx)
    assert (out.ok, out.error, len(rx.requests)) == (False, "HTTP 302: redirect (not followed)", 1)
    assert (await deliver("https://hooks.example.com/in", table, Recorder(429))).error == "HTTP 429: rate limited"


async def test_allow_private_sends_to_the_url_as_it_is():
    rx = Recorder()
    out = await deliver("http://10.0.0.1:8080/in", {}, rx, allow_private=True)
    assert out.ok and str(rx.requests[0].url) == "http://10.0.0.1:8080/in"
