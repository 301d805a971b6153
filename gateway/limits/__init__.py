"""Rate limits and token budgets: what the limit is (limit.py), how it is counted (strategy.py),
where the counts live (storage/), and the facade routes call (limiter.py)."""
