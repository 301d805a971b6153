"""Metrics, structured logs, and the request-scoped middleware."""
