from tests.gateway.data_fixtures import (  # noqa: F401
    admin_http, data_app, data_services, database, db_url, deploy_catalogue, pg_url, sqlite_url)
