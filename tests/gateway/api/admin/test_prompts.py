"""Admin prompts API: create, versions, labels (one version or weights), rollback, their errors, and an
audit row for every change."""

from tests.gateway.data_fixtures import ADMIN, assert_openai_error

HELLO = {"name": "greeting", "messages": [{"role": "system", "content": "Greet {{name}} in {{lang}}."}],
         "model": "smollm2-135m-instruct", "params": {"temperature": 0.2, "max_tokens": 16}}


async def _create(http, body=HELLO):
    r = await http.post("/admin/prompts", json=body, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()


async def _audit(http) -> list[dict]:
    r = await http.get("/admin/audit", headers=ADMIN)
    assert r.status_code == 200, r.text
    return r.json()["data"]


async def test_create_version_label_read_and_list(admin_http):
    assert await _create(admin_http) == {"name": "greeting", "version": 1, "tenant_id": None}
    r = await admin_http.post("/admin/prompts/greeting/versions", headers=ADMIN,
                              json={"messages": [{"role": "system", "content": "Hi {{name}}!"}]})
    assert r.status_code == 201 and r.json() == {"name": "greeting", "version": 2, "tenant_id": None}
    r = await admin_http.put("/admin/prompts/greeting/labels/production", json={"version": 1}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 1 and r.json()["weights"] == {"1": 100}
    r = await admin_http.put("/admin/prompts/greeting/labels/staging", json={"weights": {"1": 50, "2": 50}},
                             headers=ADMIN)
    assert r.status_code == 200 and r.json()["version"] is None

    got = (await admin_http.get("/admin/prompts/greeting", headers=ADMIN)).json()
    assert [v["version"] for v in got["versions"]] == [1, 2]
    assert got["versions"][0]["variables"] == ["lang", "name"] and got["versions"][0]["params"]["temperature"] == 0.2
    assert got["versions"][1]["model"] is None
    assert got["labels"]["production"]["weights"] == {"1": 100}
    assert got["labels"]["staging"]["weights"] == {"1": 50, "2": 50}
    listed = (await admin_http.get("/admin/prompts", headers=ADMIN)).json()["data"]
    assert [(p["name"], p["latest_version"], p["tenant_id"]) for p in listed] == [("greeting", 2, None)]

    actions = [(row["action"], row["target"]) for row in await _audit(admin_http)]
    assert actions[:4] == [("prompt.label", {"type": "prompt_label", "id": "greeting/staging"}),
                           ("prompt.label", {"type": "prompt_label", "id": "greeting/production"}),
                           ("prompt.version", {"type": "prompt", "id": "greeting"}),
                           ("prompt.create", {"type": "prompt", "id": "greeting"})]


async def test_rollback_goes_back_and_is_audited(admin_http):
    await _create(admin_http)
    await admin_http.post("/admin/prompts/greeting/versions", json={"messages": HELLO["messages"]}, headers=ADMIN)
    r = await admin_http.post("/admin/prompts/greeting/labels/production/rollback", headers=ADMIN)
    assert_openai_error(r, 404, param="label")
    await admin_http.put("/admin/prompts/greeting/labels/production", json={"version": 1}, headers=ADMIN)
    r = await admin_http.post("/admin/prompts/greeting/labels/production/rollback", headers=ADMIN)
    assert_openai_error(r, 409, code="no_previous_target")
    await admin_http.put("/admin/prompts/greeting/labels/production", json={"version": 2}, headers=ADMIN)
    r = await admin_http.post("/admin/prompts/greeting/labels/production/rollback", headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["version"] == 1 and body["previous"] == {"2": 100}
    assert [m["action"] for m in body["history"]] == ["rollback", "set", "set"]
    row = (await _audit(admin_http))[0]
    assert row["action"] == "prompt.rollback" and row["before"]["weights"] == {"2": 100}
    assert row["after"]["weights"] == {"1": 100}


async def test_delete_label_keeps_its_history_and_is_audited(admin_http):
    await _create(admin_http)
    await admin_http.put("/admin/prompts/greeting/labels/staging", json={"version": 1}, headers=ADMIN)
    r = await admin_http.delete("/admin/prompts/greeting/labels/staging", headers=ADMIN)
    assert r.status_code == 204 and r.content == b""
    assert (await admin_http.get("/admin/prompts/greeting", headers=ADMIN)).json()["labels"] == {}
    assert_openai_error(await admin_http.delete("/admin/prompts/greeting/labels/staging", headers=ADMIN), 404)
    row = (await _audit(admin_http))[0]
    assert row["action"] == "prompt.unlabel" and row["before"]["weights"] == {"1": 100} and row["after"] is None
    await admin_http.put("/admin/prompts/greeting/labels/staging", json={"version": 1}, headers=ADMIN)
    history = (await admin_http.get("/admin/prompts/greeting/labels/staging", headers=ADMIN)).json()["history"]
    assert [m["action"] for m in history] == ["set", "delete", "set"]


async def test_errors(admin_http):
    await _create(admin_http)
    assert_openai_error(await admin_http.post("/admin/prompts", json=HELLO, headers=ADMIN), 409, param="name")
    assert_openai_error(await admin_http.get("/admin/prompts/nope", headers=ADMIN), 404)
    assert_openai_error(await admin_http.post("/admin/prompts/nope/versions", json={"messages": HELLO["messages"]},
                                              headers=ADMIN), 404)
    assert_openai_error(await admin_http.put("/admin/prompts/nope/labels/production", json={"version": 1},
                                             headers=ADMIN), 404)
    assert_openai_error(await admin_http.get("/admin/prompts/greeting/labels/nope", headers=ADMIN), 404,
                        param="label")
    put = lambda body: admin_http.put("/admin/prompts/greeting/labels/production", json=body, headers=ADMIN)  # noqa: E731
    assert_openai_error(await put({"weights": {"1": 60}}), 400, param="weights")
    assert_openai_error(await put({"weights": {"1": 50, "7": 50}}), 400, param="weights")
    assert_openai_error(await put({"version": 7}), 400, param="version")
    assert_openai_error(await put({}), 400)
    bad = [{**HELLO, "name": "bad name/x"}, {**HELLO, "name": "other", "messages": []},
           {**HELLO, "name": "other", "params": {"temperature": 9}},
           {**HELLO, "name": "other", "params": {"stream": True}},
           {**HELLO, "name": "other", "params": {"no_such_field": 1}},
           {**HELLO, "name": "other", "messages": [{"role": "tool", "content": "x"}]}]
    for body in bad:
        assert_openai_error(await admin_http.post("/admin/prompts", json=body, headers=ADMIN), 400)
    listed = (await admin_http.get("/admin/prompts", headers=ADMIN)).json()["data"]
    assert [p["name"] for p in listed] == ["greeting"]  # nothing half-written


async def test_needs_the_admin_key(admin_http):
    r = await admin_http.post("/admin/prompts", json=HELLO)
    assert r.status_code == 401


async def test_an_owner_is_kept_shown_and_filtered_on(admin_http):
    r = await admin_http.post("/admin/tenants", json={"name": "owner-x"}, headers=ADMIN)
    assert r.status_code == 201, r.text
    x = r.json()["id"]
    assert (await _create(admin_http, {**HELLO, "name": "mine", "tenant_id": x}))["tenant_id"] == x
    await _create(admin_http, {**HELLO, "name": "shared"})
    assert (await admin_http.get("/admin/prompts/mine", headers=ADMIN)).json()["tenant_id"] == x
    listed = (await admin_http.get("/admin/prompts", headers=ADMIN)).json()["data"]
    assert [(p["name"], p["tenant_id"]) for p in listed] == [("mine", x), ("shared", None)]
    only = (await admin_http.get("/admin/prompts", params={"tenant_id": x}, headers=ADMIN)).json()["data"]
    assert [p["name"] for p in only] == ["mine"]
    assert_openai_error(await admin_http.post("/admin/prompts", json={**HELLO, "name": "orphan",
                                                                      "tenant_id": "no-such-tenant"},
                                              headers=ADMIN), 400, param="tenant_id")
    create = [row for row in await _audit(admin_http) if row["action"] == "prompt.create"]
    assert create[-1]["target"]["id"] == "mine" or any(r["after"].get("tenant_id") == x for r in create)
