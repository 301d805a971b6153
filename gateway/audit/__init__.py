"""The tamper-evident audit log of admin actions: an append-only, hash-chained table.

Data (`record`), hashing (`chain`), tables (`table`), appending (`writer`), reading (`query`), checking
(`verify`), and the request-bound `Auditor` (`auditor`) that admin code calls with one line, in the
transaction of the change it records:

    auditor.record(session, "prompt.update", Target("prompt", prompt.id), before=old, after=new)
    update_thing(session, ..., audit=auditor.on_write("guardrail.update", before=row))  # a CRUD write
    auditor.record_alone(database, "cache.invalidate", target, after=...)  # a change outside the database

Admin routes get theirs from `gateway.api.admin.auditing.AuditorDep` (actor from the admin credential); a
console sign-in would build `Auditor(actor="console:<user>", request_id=...)` from its own credential.
A new table audited through `on_write` adds its (target, snapshot) to `snapshot._DESCRIBE`."""
