"""Sign-in, the session cookie's flags, sign-out, CSRF, and what a tenant's session may open."""
from __future__ import annotations

import time

import httpx

from tests.console.conftest import ADMIN_KEY, admin_api, csrf_of, shot, sign_in
from tests.gateway.support import make_tenant


def _cookie(context) -> dict:
    return next(c for c in context.cookies() if c["name"] == "tollgate_console")


def test_admin_signs_in_with_a_strict_httponly_expiring_cookie_and_signs_out(context, console_server):
    page = context.new_page()
    page.goto("/console/tenants")
    assert page.url.endswith("/console/login")  # no session: the sign-in form
    shot(page, "login")
    page.get_by_label("Admin key or API key").fill("tga-not-the-key-0123456789abcdef0123")
    page.get_by_role("button", name="Sign in").click()
    assert "not accepted" in page.get_by_role("alert").inner_text()

    sign_in(page, ADMIN_KEY)
    assert page.get_by_role("heading", name="Overview").is_visible()
    cookie = _cookie(context)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]  # plain http here
    assert time.time() + 3600 < cookie["expires"] <= time.time() + 8 * 3600 + 60
    assert cookie["path"] == "/console"
    audit = admin_api(console_server, "GET", "/admin/audit", params={"action": "console.sign_in"}).json()
    assert audit["data"][0]["actor"].startswith("console:admin:")

    old = cookie["value"]
    page.get_by_role("button", name="Sign out").click()
    assert page.url.endswith("/console/login?notice=signed_out")
    assert not [c for c in context.cookies() if c["name"] == "tollgate_console"]
    replay = httpx.get(f"{console_server.url}/console/tenants", cookies={"tollgate_console": old})
    assert replay.status_code == 303 and replay.headers["location"] == "/console/login"  # signed out for good


def test_the_cookie_is_secure_behind_https(console_server):
    """Behind a TLS-terminating proxy (X-Forwarded-Proto from a trusted address) the cookie gets Secure."""
    https = {"x-forwarded-proto": "https"}
    form = httpx.get(f"{console_server.url}/console/login", headers=https)
    assert "secure" in form.headers["set-cookie"].lower()  # the sign-in form's nonce too
    token = form.text.split('name="csrf_token" value="')[1].split('"')[0]
    # httpx keeps a Secure cookie off plain http, as a browser would: send the nonce back by hand.
    r = httpx.post(f"{console_server.url}/console/login", headers=https, data={"credential": ADMIN_KEY,
                   "csrf_token": token}, cookies={"tollgate_console_login": form.cookies["tollgate_console_login"]})
    assert r.status_code == 303
    flags = r.headers["set-cookie"].lower()
    assert "secure" in flags and "httponly" in flags and "samesite=strict" in flags and "max-age=28800" in flags


def test_posts_without_the_csrf_token_are_refused(admin_page, console_server):
    page = admin_page
    page.get_by_role("link", name="Tenants").click()
    for form in ({"name": "csrf-victim"}, {"name": "csrf-victim", "csrf_token": "0" * 64}):
        r = page.request.post("/console/tenants", form=form)
        assert r.status == 403 and "security token" in r.text()
    r = page.request.post("/console/routes/chat/rollback", form={})
    assert r.status == 403
    names = [t["name"] for t in admin_api(console_server, "GET", "/admin/tenants").json()["data"]]
    assert "csrf-victim" not in names
    # The sign-in form has its token too.
    r = httpx.post(f"{console_server.url}/console/login", data={"credential": ADMIN_KEY})
    assert r.status_code == 403 and "tollgate_console=" not in r.headers.get("set-cookie", "")
    # With the page's own token the same post goes through.
    r = page.request.post("/console/tenants", form={"name": "csrf-ok-" + str(time.time_ns()),
                                                    "csrf_token": csrf_of(page)}, max_redirects=0)
    assert r.status == 303


def test_a_tenant_sees_only_its_own_pages_read_only(context, console_server):
    own_id, own_key = make_tenant(console_server.db_url)
    other_id, _ = make_tenant(console_server.db_url)
    page = context.new_page()
    sign_in(page, own_key)
    assert page.url.endswith(f"/console/tenants/{own_id}")
    assert page.get_by_role("table", name="Bill for " + time.strftime("%Y-%m", time.gmtime())).is_visible()
    assert page.get_by_role("button", name="Create key").count() == 0  # read-only
    assert page.get_by_role("button", name="Save limits").count() == 0
    assert page.get_by_role("link", name="Tenants").count() == 0
    shot(page, "tenant-own-page")

    for path in (f"/console/tenants/{other_id}", f"/console/tenants/{other_id}/usage.csv", "/console/tenants",
                 "/console/bills", "/console/routes", "/console/cache", "/console/workers"):
        r = page.goto(path)
        assert r.status == 403, path
    assert page.goto("/console/").url.endswith(f"/console/tenants/{own_id}")  # the overview is the operator's

    token = page.request.get(f"/console/tenants/{own_id}").text().split('name="csrf_token" value="')[1].split('"')[0]
    for path, form in ((f"/console/tenants/{own_id}/keys", {}), (f"/console/tenants/{own_id}/edit", {"rpm": "1"}),
                       ("/console/routes/chat/rollback", {}), ("/console/tenants", {"name": "by-a-tenant"})):
        r = page.request.post(path, form={**form, "csrf_token": token}, max_redirects=0)
        assert r.status == 403, path  # a valid token does not make a tenant an admin
    # The admin API wants the admin key itself: the console's cookie opens nothing there.
    assert page.request.get("/admin/tenants").status == 401
    audit = admin_api(console_server, "GET", "/admin/audit",
                      params={"action": "console.sign_in", "target": f"tenant:{own_id}"}).json()
    assert audit["data"] and audit["data"][0]["actor"] == f"console:tenant:{own_id}"


def test_a_revoked_key_ends_its_tenant_session(context, console_server):
    tenant_id, key = make_tenant(console_server.db_url)
    page = context.new_page()
    sign_in(page, key)
    keys = admin_api(console_server, "GET", f"/admin/tenants/{tenant_id}/keys").json()["data"]
    admin_api(console_server, "DELETE", f"/admin/keys/{keys[0]['id']}")
    page.goto(f"/console/tenants/{tenant_id}")
    assert page.url.endswith("/console/login")
