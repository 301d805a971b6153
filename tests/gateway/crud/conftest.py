from tests.gateway.data_fixtures import database, db_url, pg_url, sqlite_url  # noqa: F401
