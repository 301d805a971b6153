"""Guardrails: per-tenant (and per-key) rules applied to prompts before the cache and the model, and to answers
before the client: deny patterns (RE2, linear time), PII detection and redaction, a prompt-size limit, model
access. `rules` (data + validation), `detectors/` (one PII entity per file), `engine` (a rule set over one
text), `holdback` (the streaming filter), `store` (a tenant's rules, cached briefly)."""
