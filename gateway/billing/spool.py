"""A local, append-only spool for ledger rows the database cannot take right now.

Rows are JSON lines in segment files under one directory, written and fsync'd a batch at a time.
A writer appends to its active segment until it passes `segment_bytes`, then starts another;
`seal()` ends the active one so a replay may take it. A replayer reads a whole sealed segment,
hands its rows to the database, and deletes the file only once they are committed; a crash at
any point leaves the file for the next replay (rows already committed are skipped by request_id).

Several processes may share the directory: a writer holds an flock on its active segment, and a
replayer takes the same lock before reading one, so a segment still being written is never read
or deleted, and one left behind by a dead process is picked up by whoever replays next.

`max_bytes` bounds admission, not a single append: `full` says new billable work should be
refused, while rows of requests already running are still accepted (the overshoot is bounded by
what is in flight). Nothing here drops a row."""
from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SEGMENT_GLOB = "segment-*.jsonl"
REJECTED = "rejected.jsonl"  # rows the database refused outright: kept for an operator, never replayed


@dataclass(slots=True)
class SpoolConfig:
    directory: Path
    max_bytes: int = 256 * 2**20  # past this, `full`: refuse new billable work
    segment_bytes: int = 8 * 2**20  # a writer starts a new segment past this

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.segment_bytes < 1:
            raise ValueError("max_bytes and segment_bytes must be >= 1")
        self.directory = Path(self.directory)


@dataclass(frozen=True, slots=True)
class Segment:
    """A sealed segment as read by a replayer: its rows, and lines that did not parse (a torn
    last line after a crash mid-write)."""

    path: Path
    rows: list[dict[str, Any]]
    bad_lines: list[str]


class Spool:
    def __init__(self, config: SpoolConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._active: int | None = None  # fd of this writer's segment (flock held)
        self._active_path: Path | None = None
        self._active_bytes = 0
        self._bytes = 0  # every segment in the directory, as of the last scan plus our appends
        self._write_failed = False
        self._opened = False

    # --- state

    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def full(self) -> bool:
        """No room for new work's rows: over max_bytes, or the last write failed (disk full)."""
        return self._write_failed or self._bytes >= self.config.max_bytes

    @property
    def pending(self) -> bool:
        """Rows are waiting for a replay."""
        return self._bytes > 0

    # --- writing

    def open(self) -> None:
        """Create the directory and count what earlier processes left in it."""
        self.config.directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._opened = True
            self._rescan()

    def append(self, rows: list[dict[str, Any]]) -> None:
        """Write `rows` as JSON lines and fsync them; on return they survive a crash. Raises
        OSError (disk full, I/O error) with nothing guaranteed written: the caller keeps the rows."""
        if not rows:
            return
        data = "".join(json.dumps(r, separators=(",", ":"), default=str) + "\n" for r in rows).encode()
        with self._lock:
            if not self._opened:
                self.config.directory.mkdir(parents=True, exist_ok=True)
                self._opened = True
                self._rescan()
            try:
                if self._active is None or self._active_bytes >= self.config.segment_bytes:
                    self._start_segment()
                _write_all(self._active, data)
                os.fsync(self._active)
            except OSError:
                # A partial line may be on disk: never append after it (a replay sets it aside).
                self._write_failed = True
                self._seal_locked()
                raise
            self._write_failed = False
            self._active_bytes += len(data)
            self._bytes += len(data)

    def seal(self) -> None:
        """End the active segment (if any) so a replay may take it; the next append starts a new one."""
        with self._lock:
            self._seal_locked()

    def close(self) -> None:
        self.seal()

    def _start_segment(self) -> None:
        self._seal_locked()
        directory = self.config.directory
        name = f"segment-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        # Created under a name replayers ignore, locked, then renamed: a replayer can never take
        # (and delete) a segment between its creation and its writer's lock.
        hidden = directory / f".{name}.new"
        fd = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(hidden, directory / name)
            _fsync_dir(directory)
        except BaseException:
            os.close(fd)
            raise
        self._active, self._active_path, self._active_bytes = fd, directory / name, 0

    def _seal_locked(self) -> None:
        if self._active is None:
            return
        fd, path, written = self._active, self._active_path, self._active_bytes
        self._active, self._active_path, self._active_bytes = None, None, 0
        os.close(fd)  # releases the flock
        if written == 0 and path is not None:
            path.unlink(missing_ok=True)  # nothing in it: not worth a replay

    def _rescan(self) -> None:
        self._bytes = sum(_size(p) for p in self.config.directory.glob(SEGMENT_GLOB))

    # --- replaying

    def segments(self) -> list[Path]:
        """Every segment file, oldest first (some may be other writers' active ones: `take` skips those)."""
        with self._lock:
            if self._opened:
                self._rescan()
        return sorted(self.config.directory.glob(SEGMENT_GLOB))

    @contextmanager
    def take(self, path: Path) -> Iterator[Segment | None]:
        """Lock a sealed segment and read it; None when a writer still holds it or it is gone.
        Call `remove` inside the block once its rows are committed."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            yield None
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield None  # a live writer's active segment
                return
            if not path.exists():
                yield None  # another replayer finished it while we waited for the lock
                return
            with os.fdopen(os.dup(fd), "rb") as f:
                raw = f.read()
            yield _parse(path, raw)
        finally:
            os.close(fd)

    def remove(self, segment: Segment) -> None:
        """Delete a segment whose rows are all committed (or set aside): inside `take`."""
        size = _size(segment.path)
        segment.path.unlink(missing_ok=True)
        _fsync_dir(self.config.directory)
        with self._lock:
            self._bytes = max(0, self._bytes - size)

    def reject(self, entries: list[dict[str, Any]]) -> None:
        """Keep rows the database refused outright (each {"reason", "row" | "line"}) in the
        rejected file, fsync'd: an operator's to look at; a replay never retries them."""
        if not entries:
            return
        data = "".join(json.dumps(e, separators=(",", ":"), default=str) + "\n" for e in entries).encode()
        self.config.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.config.directory / REJECTED, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def _parse(path: Path, raw: bytes) -> Segment:
    rows, bad = [], []
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            row = None
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad.append(line.decode("utf-8", "replace"))
    if bad:
        log.error("spool: %d unreadable line(s) in %s (a write cut short?)", len(bad), path.name)
    return Segment(path, rows, bad)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
