"""One live gateway (canned backend, two versions behind `chat`) and one headless Debian Chromium for every
console test (package-scoped: both go once tests/console is done). Screenshots go to tests/console/screenshots/
(ignored by git)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx
import pytest

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, FP32, CannedBackend, LiveServer, migrate_and_seed

BF16 = "smollm2-135m-instruct@bf16"
SHOTS = Path(__file__).resolve().parent / "screenshots"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture(scope="package")
def console_server(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("console")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    # No automatic rollback: the route tests move `chat` themselves and must see only their own changes.
    settings = gateway_settings(tmp, url, embeddings_enabled=False, cache_enabled=False,
                                route_rollback_enabled=False)
    backend = CannedBackend(tokens=6, versions=[FP32, BF16])
    with LiveServer(create_app(settings, backend=backend)) as server:
        server.db_url = url
        yield server


@pytest.fixture(scope="package")
def browser():
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("Debian's Chromium is missing: run `bash deploy/scripts/ensure-services.sh` (installs it)")
    with sync_playwright() as p:
        # --no-sandbox: tests run as root, where Chromium's sandbox refuses to start.
        b = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def context(browser, console_server):
    ctx = browser.new_context(base_url=console_server.url, viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(10_000)
    yield ctx
    ctx.close()


def sign_in(page, credential: str) -> None:
    """As a person does it: open the console, type the key into the labelled field, press the button."""
    page.goto("/console/")
    page.get_by_label("Admin key or API key").fill(credential)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()


@pytest.fixture(scope="package")
def admin_state(browser, console_server):
    """The admin's signed-in cookies, signed in once (a test that signs out signs in on its own)."""
    ctx = browser.new_context(base_url=console_server.url)
    sign_in(ctx.new_page(), ADMIN_KEY)
    state = ctx.storage_state()
    ctx.close()
    return state


@pytest.fixture
def admin_page(browser, console_server, admin_state):
    ctx = browser.new_context(base_url=console_server.url, viewport={"width": 1280, "height": 900},
                              storage_state=admin_state)
    ctx.set_default_timeout(10_000)
    page = ctx.new_page()
    page.goto("/console/")
    yield page
    ctx.close()


def shot(page, name: str, **kwargs) -> None:
    SHOTS.mkdir(exist_ok=True)
    kwargs.setdefault("full_page", True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), **kwargs)


def admin_api(server, method: str, path: str, **kwargs) -> httpx.Response:
    return httpx.request(method, f"{server.url}{path}", headers=ADMIN, timeout=30, **kwargs)


def csrf_of(page) -> str:
    """The page's CSRF token (what a form on it would post)."""
    return re.search(r'name="csrf_token" value="([^"]+)"', page.content())[1]
