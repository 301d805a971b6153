"""The tamper-evident audit log of admin actions: an append-only, hash-chained table.

Data (`record`), hashing (`chain`), tables (`table`), appending (`writer`), reading (`query`), checking
(`verify`), and the request-bound `Auditor` that admin routes call with one line."""
