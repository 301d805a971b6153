"""The store and resolution over a migrated database: versions are immutable and numbered, labels move
with history and roll back, and every request reads the label afresh (two services on one database)."""
import pytest

from gateway.db.database import Database
from gateway.db.migrate import upgrade
from gateway.crud.tenants import create_tenant
from gateway.prompts import NoPreviousTarget, PromptExists, PromptNotFound, PromptRef, PromptService, UnknownOwner
from gateway.prompts import store

HELLO = [{"role": "system", "content": "Greet {{name}}."}]
T = "tenant-a"  # the caller's tenant in tests where ownership is not the point (every prompt there is shared)


@pytest.fixture
def database(tmp_path):
    url = f"sqlite:///{tmp_path / 'prompts.db'}"
    upgrade(url, "heads")
    db = Database(url)
    yield db
    db.dispose()


def write(db, name="greeting", versions=2):
    with db.session() as s:
        store.create_prompt(s, name=name, messages=HELLO, model=None, params={})
        for i in range(2, versions + 1):
            store.add_version(s, name=name, messages=[{"role": "system", "content": f"v{i} {{{{name}}}}"}],
                              model="m", params={"temperature": 0.5})


def test_versions_count_up_and_names_are_unique(database):
    write(database, versions=3)
    with database.session() as s:
        assert [v.version for v in store.versions(s, name="greeting")] == [1, 2, 3]
        with pytest.raises(PromptExists):
            store.create_prompt(s, name="greeting", messages=HELLO, model=None, params={})
        with pytest.raises(PromptNotFound):
            store.add_version(s, name="nope", messages=HELLO, model=None, params={})


def test_default_is_production_else_latest(database):
    write(database)
    service = PromptService(database)
    assert service.resolve_now(PromptRef("greeting"), key="u", tenant_id=T).version == 2
    with database.session() as s:
        store.set_label(s, name="greeting", label="production", weights={1: 100})
    assert service.resolve_now(PromptRef("greeting"), key="u", tenant_id=T).version == 1
    assert service.resolve_now(PromptRef("greeting", version=2), key="u", tenant_id=T).version == 2


def test_unknown_prompt_version_and_label_are_not_found(database):
    write(database)
    service = PromptService(database)
    for ref, param in [(PromptRef("nope"), "prompt.id"), (PromptRef("nope", label="x"), "prompt.id"),
                       (PromptRef("greeting", version=9), "prompt.version"),
                       (PromptRef("greeting", label="staging"), "prompt.label"),
                       (PromptRef("nope", version=1), "prompt.id")]:
        with pytest.raises(PromptNotFound) as e:
            service.resolve_now(ref, key="u", tenant_id=T)
        assert e.value.param == param, ref


def test_a_move_on_one_replica_is_served_by_another_at_once(database):
    write(database)
    replicas = [PromptService(database), PromptService(database)]
    with database.session() as s:
        store.set_label(s, name="greeting", label="production", weights={1: 100})
    assert [r.resolve_now(PromptRef("greeting"), key="u", tenant_id=T).version for r in replicas] == [1, 1]
    with database.session() as s:
        store.set_label(s, name="greeting", label="production", weights={2: 100})
    assert [r.resolve_now(PromptRef("greeting"), key="u", tenant_id=T).version for r in replicas] == [2, 2]


def test_rollback_returns_to_the_previous_target_and_keeps_history(database):
    write(database)
    with database.session() as s:
        store.set_label(s, name="greeting", label="production", weights={1: 100})
        with pytest.raises(NoPreviousTarget):
            store.rollback_label(s, name="greeting", label="production")
        store.set_label(s, name="greeting", label="production", weights={1: 50, 2: 50})
        state = store.rollback_label(s, name="greeting", label="production")
        assert state.weights == {1: 100} and state.previous == {1: 50, 2: 50} and state.revision == 3
        assert [m.action for m in store.moves(s, name="greeting", label="production")] == ["rollback", "set", "set"]


def test_an_owned_prompt_is_found_only_by_its_owner_and_others_see_a_missing_one(database):
    with database.session() as s:
        x, y = create_tenant(s, name="x").id, create_tenant(s, name="y").id
        store.create_prompt(s, name="secret", messages=HELLO, model=None, params={}, tenant_id=x)
        store.set_label(s, name="secret", label="production", weights={1: 100})
    service = PromptService(database)
    assert service.resolve_now(PromptRef("secret"), key="u", tenant_id=x).messages == tuple(HELLO)
    for ref in [PromptRef("secret"), PromptRef("secret", label="production"), PromptRef("secret", version=1),
                PromptRef("secret", label="nope"), PromptRef("secret", version=9)]:
        other = _not_found(service, ref, tenant_id=y)
        missing = _not_found(service, PromptRef("absent", label=ref.label, version=ref.version), tenant_id=y)
        # word for word what a prompt that does not exist answers, whatever label or version is asked for
        assert (other.message.replace("secret", "absent"), other.param) == (missing.message, missing.param)


def _not_found(service, ref, *, tenant_id) -> PromptNotFound:
    with pytest.raises(PromptNotFound) as e:
        service.resolve_now(ref, key="u", tenant_id=tenant_id)
    return e.value


def test_a_cached_version_is_not_served_to_another_tenant(database):
    with database.session() as s:
        x, y = create_tenant(s, name="x").id, create_tenant(s, name="y").id
        store.create_prompt(s, name="secret", messages=HELLO, model=None, params={}, tenant_id=x)
    service = PromptService(database)
    service.resolve_now(PromptRef("secret", version=1), key="u", tenant_id=x)  # now in the version cache
    with pytest.raises(PromptNotFound):
        service.resolve_now(PromptRef("secret", version=1), key="u", tenant_id=y)


def test_a_shared_prompt_serves_every_tenant_and_an_unknown_owner_is_refused(database):
    write(database)
    service = PromptService(database)
    assert {service.resolve_now(PromptRef("greeting"), key="u", tenant_id=t).version for t in ("a", "b")} == {2}
    with database.session() as s:
        with pytest.raises(UnknownOwner):
            store.create_prompt(s, name="orphan", messages=HELLO, model=None, params={}, tenant_id="no-such")
        assert [(n, t) for n, t, _, _ in store.list_names(s)] == [("greeting", None)]
