from tests.gateway.data_fixtures import (  # noqa: F401
    data_app, data_services, database, db_url, deploy_catalogue, pg_url, sqlite_url)
