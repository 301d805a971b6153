"""One gateway process with the canned backend, configured from the environment exactly as
`tollgate serve` is (DATABASE_URL, REDIS_URL, TOLLGATE_*). For multi-process limit tests."""
from __future__ import annotations

import sys

import uvicorn

from gateway.main import create_app
from gateway.settings import Settings
from tests.gateway.support import CannedBackend


def main() -> None:
    port = int(sys.argv[1])
    app = create_app(Settings(embeddings_enabled=False, cache_enabled=False),
                     backend=CannedBackend(tokens=8, delay_s=0.002))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
