"""Which version serves a request: weighted canary splits, pins, fallbacks and rollbacks."""
