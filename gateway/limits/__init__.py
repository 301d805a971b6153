"""Rate limits and token budgets: what the limit is (limit.py), how it is counted (strategy.py),
where the counts live (storage/), what a request holds (reservation.py), what to do while the shared
store fails (failover.py), why a request was refused (errors.py), and the facade routes call (limiter.py)."""
