"""JSON log lines that carry the request id of the request being served."""
from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import datetime, UTC

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)

_RESERVED = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id_var.get()
        if rid is not None:
            out["request_id"] = rid
        out.update({k: v for k, v in vars(record).items() if k not in _RESERVED})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(level: str) -> None:
    """tollgate.* loggers (request-path logs) are ours: JSON, at `level`. Module loggers of the
    gateway and workers packages also get the JSON handler, but keep their level and propagation
    so whoever configured the root (a test harness, an embedding app) still sees them."""
    ours = logging.getLogger("tollgate")
    ours.handlers[:] = [_json_handler()]
    ours.setLevel(level.upper())
    ours.propagate = False
    for name in ("gateway", "workers"):
        logger = logging.getLogger(name)
        if not any(isinstance(h.formatter, JSONFormatter) for h in logger.handlers):
            logger.addHandler(_json_handler())


def _json_handler() -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter())
    return handler
