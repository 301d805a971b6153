"""The operator changes the `chat` alias' weights on the Routes page and the router follows; then rolls back."""
from __future__ import annotations

import uuid

from openai import OpenAI

from tests.console.conftest import BF16, shot
from tests.gateway.support import FP32, make_tenant


def _served(server, key: str, n: int = 12) -> set[str]:
    """The versions that served `n` chat calls (the x-tollgate-model header), each with its own user."""
    client = OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    seen = set()
    for _ in range(n):
        raw = client.chat.completions.with_raw_response.create(
            model="chat", max_tokens=2, user=uuid.uuid4().hex, messages=[{"role": "user", "content": "Hi"}])
        seen.add(raw.headers["x-tollgate-model"])
    return seen


def _set_weights(page, fp32: str, bf16: str) -> None:
    page.get_by_label(f"Weight of {FP32} in chat").fill(fp32)
    page.get_by_label(f"Weight of {BF16} in chat").fill(bf16)
    page.get_by_role("button", name="Save weights of chat").click()


def test_weights_edited_on_the_page_steer_the_router_and_roll_back(admin_page, console_server):
    page = admin_page
    _, key = make_tenant(console_server.db_url)
    page.get_by_role("link", name="Routes").click()
    assert page.get_by_label(f"Weight of {FP32} in chat").input_value() == "90"

    _set_weights(page, "0", "100")
    assert "Weights saved" in page.get_by_role("status").inner_text()
    assert page.get_by_label(f"Weight of {BF16} in chat").input_value() == "100"
    assert _served(console_server, key) == {BF16}

    _set_weights(page, "100", "0")
    assert _served(console_server, key) == {FP32}

    _set_weights(page, "50", "60")  # refused by the router, in words, nothing changed
    assert "weights must sum to 100" in page.get_by_role("alert").inner_text()
    assert _served(console_server, key, 4) == {FP32}

    _set_weights(page, "50", "50")
    assert _served(console_server, key, 16) == {FP32, BF16}
    page.get_by_role("button", name="Roll back chat").click()
    assert "Rolled back" in page.get_by_role("status").inner_text()
    assert page.get_by_label(f"Weight of {BF16} in chat").input_value() == "0"
    assert _served(console_server, key) == {FP32}

    trail = page.get_by_role("table", name="Route changes, newest first")
    newest = trail.locator("tbody tr").first.inner_text()
    assert "rollback" in newest and "console:admin:" in newest
    page.reload()  # the page's numbers come from the router's window: the calls above are there
    shot(page, "routes")


def test_promote_from_the_page(admin_page, console_server):
    page = admin_page
    _, key = make_tenant(console_server.db_url)
    page.get_by_role("link", name="Routes").click()
    page.get_by_label("Version to promote in chat").select_option(BF16)
    page.get_by_role("button", name="Promote in chat").click()
    assert "promoted" in page.get_by_role("status").inner_text()
    assert _served(console_server, key, 6) == {BF16}
    page.get_by_label("Version to promote in chat").select_option(FP32)  # leave `chat` as the catalogue has it
    page.get_by_role("button", name="Promote in chat").click()
    _set_weights(page, "90", "10")
