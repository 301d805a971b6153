"""MaaS economics: what serving costs (replica-hours at hardware prices) against what it earns (the ledger)."""
