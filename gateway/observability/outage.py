"""How a background loop reports a dependency that keeps failing (the database, Redis): one line when it starts
failing, one when it works again with how many attempts failed meanwhile, and nothing in between, instead of a
traceback every poll. The first failure's traceback is kept at DEBUG for whoever needs it."""
from __future__ import annotations

import logging
import time


class OutageLog:
    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log, self.what = log, what  # `what`: the loop's work, as the lines name it ("batch runner: claiming")
        self.failures = 0
        self._since = 0.0

    @property
    def failing(self) -> bool:
        return self.failures > 0

    def failed(self, error: BaseException) -> None:
        """One attempt failed: logged only when it is the first since the loop last worked."""
        self.failures += 1
        if self.failures == 1:
            self._since = time.monotonic()
            self.log.warning("%s is failing (%s: %s); retrying, and logging again when it recovers", self.what,
                             type(error).__name__, str(error).splitlines()[0][:300] if str(error) else "")
            self.log.debug("%s: the first failure", self.what, exc_info=error)

    def succeeded(self) -> None:
        """An attempt worked: logged only when it ends a run of failures."""
        if self.failures:
            self.log.warning("%s recovered after %d failed attempt(s) over %.1fs", self.what, self.failures,
                             time.monotonic() - self._since)
            self.failures = 0
