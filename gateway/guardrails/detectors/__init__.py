"""PII detectors, one entity per file; `registry.DETECTORS` names them for rules ("entities")."""
