import pytest

from tests.gateway.data_fixtures import (  # noqa: F401
    admin_http, data_app, data_services, database, deploy_catalogue, pg_url, sqlite_url)


@pytest.fixture
def db_url(request, sqlite_url):
    """SQLite unless a test asks for both (BOTH): PostgreSQL runs where concurrency is the point."""
    return sqlite_url if getattr(request, "param", "sqlite") == "sqlite" else request.getfixturevalue("pg_url")


BOTH = pytest.mark.parametrize("db_url", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
                               indirect=True)
