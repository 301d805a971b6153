"""What CRUD functions raise; the API turns these into 4xx errors."""


class AlreadyExists(ValueError):
    """A unique field (a tenant's name) is taken."""
