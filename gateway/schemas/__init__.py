"""API schemas (wire shapes), apart from table models."""
