"""PUT/GET /admin/tenants/{id}/guardrails: rules are validated naming the bad field, saved, read back, and
every change is in the audit log with what it replaced."""
from tests.gateway.data_fixtures import ADMIN, assert_openai_error, new_tenant_key

EMAIL_OUT = {"name": "emails-out", "stage": "output", "kind": "pii", "entities": ["email"], "mode": "redact"}
DENY_IN = {"name": "no-passwords", "stage": "input", "kind": "deny_pattern", "pattern": "(?i)password",
           "mode": "block"}


async def test_put_then_get_returns_the_rules_and_the_change_is_audited(admin_http):
    tenant_id, _ = await new_tenant_key(admin_http, "guarded")
    url = f"/admin/tenants/{tenant_id}/guardrails"
    assert (await admin_http.get(url, headers=ADMIN)).json()["rules"] == []
    r = await admin_http.put(url, headers=ADMIN, json=[EMAIL_OUT])
    assert r.status_code == 200, r.text
    r = await admin_http.put(url, headers=ADMIN, json={"rules": [EMAIL_OUT, DENY_IN]})
    assert r.json()["rules"] == [EMAIL_OUT, DENY_IN]
    assert (await admin_http.get(url, headers=ADMIN)).json()["rules"] == [EMAIL_OUT, DENY_IN]
    audit = (await admin_http.get("/admin/audit", headers=ADMIN,
                                  params={"target_type": "guardrails"})).json()["data"]
    changes = [(a["action"], a["target"]["id"], a["before"], a["after"]) for a in audit
               if a["target"]["type"] == "guardrails"]
    assert changes == [("guardrails.set", tenant_id, [EMAIL_OUT], [EMAIL_OUT, DENY_IN]),
                       ("guardrails.set", tenant_id, [], [EMAIL_OUT])]


BAD = [({**EMAIL_OUT, "kind": "magic"}, "rules[0].kind"),
       ({**EMAIL_OUT, "stage": "sideways"}, "rules[0].stage"),
       ({**EMAIL_OUT, "mode": "scold"}, "rules[0].mode"),
       ({**EMAIL_OUT, "entities": ["email", "dna"]}, "rules[0].entities"),
       ({**DENY_IN, "pattern": "(a)\\1"}, "rules[0].pattern"),
       ({**DENY_IN, "pattern": "(unclosed"}, "rules[0].pattern")]


async def test_a_bad_rule_is_a_400_naming_the_field_and_nothing_is_saved(admin_http):
    tenant_id, _ = await new_tenant_key(admin_http, "strict")
    url = f"/admin/tenants/{tenant_id}/guardrails"
    for rule, param in BAD:
        assert_openai_error(await admin_http.put(url, headers=ADMIN, json=[rule]), 400, param=param)
    assert (await admin_http.get(url, headers=ADMIN)).json()["rules"] == []


async def test_a_catastrophic_pattern_is_saved_because_re2_runs_it_in_linear_time(admin_http):
    tenant_id, _ = await new_tenant_key(admin_http, "re2")
    r = await admin_http.put(f"/admin/tenants/{tenant_id}/guardrails", headers=ADMIN,
                             json=[{**DENY_IN, "pattern": "(a+)+$"}])
    assert r.status_code == 200


async def test_a_rule_scoped_to_a_key_must_name_one_of_the_tenants_keys(admin_http):
    tenant_id, key = await new_tenant_key(admin_http, "scoped")
    _, other = await new_tenant_key(admin_http, "other")
    url = f"/admin/tenants/{tenant_id}/guardrails"
    assert (await admin_http.put(url, headers=ADMIN, json=[{**DENY_IN, "key_id": key["id"]}])).status_code == 200
    assert_openai_error(await admin_http.put(url, headers=ADMIN, json=[{**DENY_IN, "key_id": other["id"]}]), 400,
                        param="rules[0].key_id")


async def test_unknown_tenant_and_no_admin_key(admin_http):
    assert_openai_error(await admin_http.get("/admin/tenants/nope/guardrails", headers=ADMIN), 404)
    assert (await admin_http.put("/admin/tenants/nope/guardrails", json=[])).status_code == 401
