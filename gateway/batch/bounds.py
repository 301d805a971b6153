"""How much a batch may write: its output and error files together hold at most the batch's limit (the
gateway's TOLLGATE_BATCH_MAX_OUTPUT_BYTES, or less when the tenant's file quota has less room), and one line at
most TOLLGATE_BATCH_MAX_LINE_OUTPUT_BYTES. A line that does not fit is not written: its place in the error file
says why, in a few hundred bytes. Pure: sizes in, verdicts out."""
from __future__ import annotations

from dataclasses import dataclass

LIMIT_CODE = "output_limit_exceeded"
BATCH_SETTING = "TOLLGATE_BATCH_MAX_OUTPUT_BYTES"
LINE_SETTING = "TOLLGATE_BATCH_MAX_LINE_OUTPUT_BYTES"


@dataclass(slots=True)
class OutputBudget:
    limit: int  # bytes of output and error lines the batch may hold
    line_limit: int  # bytes one line may hold
    limit_source: str = BATCH_SETTING  # what set `limit`, for the error message
    used: int = 0  # bytes already written (a resumed batch starts from what its recorded lines hold)
    exhausted: bool = False  # the limit was reached: every later line fails
    refused: int = 0  # lines not written

    def admit(self, size: int) -> str | None:
        """Count a line of `size` bytes, or say why it cannot be written (then it is not counted)."""
        why = None
        if self.exhausted:
            why = self.batch_message()
        elif size > self.line_limit:
            why = (f"This request's output ({size} bytes) exceeds the per-line output limit of {self.line_limit} "
                   f"bytes ({LINE_SETTING}); it was not written.")
        elif self.used + size > self.limit:
            self.exhausted = True
            why = self.batch_message()
        if why is None:
            self.used += size
        else:
            self.refused += 1
        return why

    def batch_message(self) -> str:
        return (f"The batch's output reached its limit of {self.limit} bytes ({self.limit_source}); this request "
                "and every later one were not written.")

    def line_message(self) -> str:
        return (f"{self.refused} request(s) had more output than the per-line output limit of {self.line_limit} "
                f"bytes ({LINE_SETTING}); they were not written (see the error file).")


def budget(*, max_output_bytes: int, max_line_bytes: int, used: int, quota_room: int | None) -> OutputBudget:
    """The batch's budget: the gateway's limit, or the tenant's remaining file quota when that is smaller."""
    if quota_room is not None and used + max(quota_room, 0) < max_output_bytes:
        return OutputBudget(used + max(quota_room, 0), max_line_bytes, "the tenant's file storage quota", used)
    return OutputBudget(max_output_bytes, max_line_bytes, BATCH_SETTING, used)
