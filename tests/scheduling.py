"""How `make test` shares the suite between its pytest-xdist workers: a file per unit (its module fixtures stay
together), except that files sharing an expensive session fixture run on one worker, and the longest units
start first.

- Groups: the files that start Ray (`ray_cluster`: a local cluster, Serve's controller and proxy) and the files
  that run transformers' reference model (`hf_model`, `hf_references`, `hf_tokenizer`) are one unit, on one
  worker, one after the other. Split over two workers, each worker paid for its own cluster or reference load;
  as two units they ran side by side, and the engine's two-thread team in the reference tests waited at its
  barriers for threads the Ray processes had preempted (the one-at-a-time reference test: 8.7 s alone, 31-33 s
  beside Ray). tests/test_scheduling.py checks that no file using those fixtures is left out of the group.
- Order: units start longest first (their seconds in tests/durations.json, written from a JUnit report by
  `python -m tests.scheduling REPORT.xml`), so no long file starts last while the other worker idles. A unit
  the file does not know counts as the median.
"""
from __future__ import annotations

import json
import statistics
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

DURATIONS = Path(__file__).with_name("durations.json")
GROUPS: dict[str, tuple[str, ...]] = {
    "ray-and-reference": ("tests/workers/serve/test_ray_pool.py", "tests/workers/serve/test_overload.py",
                          "tests/workers/serve/test_prefix_routing.py", "tests/workers/model/test_llama.py",
                          "tests/workers/model/test_tokenizer.py", "tests/workers/test_reference_equivalence.py",
                          "tests/workers/engine/spec_decode/test_spec_decode_real_model.py"),
}
GROUP_FIXTURES: dict[str, tuple[str, ...]] = {
    "ray-and-reference": ("ray_cluster", "hf_model", "hf_references", "hf_tokenizer")}
_GROUP_OF = {path: name for name, paths in GROUPS.items() for path in paths}


def unit_of(nodeid: str) -> str:
    """The unit a test runs in: its file, or the group its file belongs to."""
    path = nodeid.split("::", 1)[0]
    return _GROUP_OF.get(path, path)


class GroupedFileScheduling(LoadScopeScheduling):
    """LoadScopeScheduling with units from unit_of(), handed out longest first."""

    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        self._seconds: dict[str, float] = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _assign_work_unit(self, node) -> None:
        if not self._ordered:  # the queue is complete when the first unit is handed out
            default = statistics.median(self._seconds.values()) if self._seconds else 0.0
            ordered = sorted(self.workqueue.items(), key=lambda item: -self._seconds.get(item[0], default))
            self.workqueue.clear()
            self.workqueue.update(ordered)
            self._ordered = True
        super()._assign_work_unit(node)


def durations_from_junit(report: Path) -> dict[str, float]:
    """Seconds per unit (setup, call and teardown of each test) from a JUnit XML report."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(report).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"
        while path.count("/") and not Path(path).exists():  # a class inside the module: drop its name
            path = path.rsplit("/", 1)[0] + ".py"
        seconds[unit_of(path)] += float(case.get("time", 0))
    return {unit: round(s, 1) for unit, s in sorted(seconds.items())}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.scheduling REPORT.xml   (from pytest --junitxml=REPORT.xml)")
    DURATIONS.write_text(json.dumps(durations_from_junit(Path(sys.argv[1])), indent=0) + "\n")
    print(f"wrote {DURATIONS}")
