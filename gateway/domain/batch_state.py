"""A batch's states and the moves between them (OpenAI's names)."""
from __future__ import annotations

VALIDATING, FAILED, IN_PROGRESS, FINALIZING = "validating", "failed", "in_progress", "finalizing"
COMPLETED, EXPIRED, CANCELLING, CANCELLED = "completed", "expired", "cancelling", "cancelled"

TERMINAL = frozenset({FAILED, COMPLETED, EXPIRED, CANCELLED})
# What a runner picks up: work still to do, a cancel to finish, or an output file still to write.
RUNNABLE = frozenset({VALIDATING, IN_PROGRESS, CANCELLING, FINALIZING})
CANCELLABLE = frozenset({VALIDATING, IN_PROGRESS})

# Each state's time stamp column on the batch (created_at aside).
STAMP = {IN_PROGRESS: "in_progress_at", FINALIZING: "finalizing_at", COMPLETED: "completed_at",
         FAILED: "failed_at", EXPIRED: "expired_at", CANCELLING: "cancelling_at", CANCELLED: "cancelled_at"}

_MOVES = {
    VALIDATING: {IN_PROGRESS, FAILED, CANCELLING, FINALIZING},  # FINALIZING: expired before it started
    IN_PROGRESS: {FINALIZING, CANCELLING, FAILED},  # FAILED: its input file was deleted while it ran
    CANCELLING: {FINALIZING},
    FINALIZING: {COMPLETED, EXPIRED, CANCELLED},
}

WINDOWS_S = {"24h": 24 * 3600}  # completion_window values OpenAI accepts


def can_move(status: str, to: str) -> bool:
    return to in _MOVES.get(status, ())


def outcome(cancelled: bool, expired: bool) -> str:
    """Where finalizing leads: a cancel asked for wins over the window running out."""
    if cancelled:
        return CANCELLED
    return EXPIRED if expired else COMPLETED
