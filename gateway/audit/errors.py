"""What the audit log raises."""


class ChainHeadMissing(RuntimeError):
    """audit_chain_head has no row: the database was not migrated, or someone deleted it (run `tollgate
    audit verify`). Appends refuse rather than start a new chain that would hide the old one."""
