"""The suite's scheduling (tests/scheduling.py): the groups name real files and miss none that uses their
fixtures, and the durations file is readable."""
import json
import re
from pathlib import Path

from tests.scheduling import DURATIONS, GROUP_FIXTURES, GROUPS, unit_of

ROOT = Path(__file__).resolve().parent.parent


def test_every_grouped_file_exists():
    assert all((ROOT / path).is_file() for paths in GROUPS.values() for path in paths)


def test_every_file_using_a_groups_fixture_is_in_the_group():
    for group, fixtures in GROUP_FIXTURES.items():
        uses = re.compile(r"def \w+\([^)]*\b(" + "|".join(fixtures) + r")\b", re.S)
        users = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py") if uses.search(p.read_text())}
        assert users <= set(GROUPS[group]), users - set(GROUPS[group])


def test_a_test_runs_in_its_files_unit_or_its_group():
    assert unit_of("tests/workers/serve/test_overload.py::test_x[a]") == "ray-and-reference"
    assert unit_of("tests/gateway/test_fuzz_api.py::test_x") == "tests/gateway/test_fuzz_api.py"


def test_the_durations_file_gives_seconds_per_unit():
    seconds = json.loads(DURATIONS.read_text())
    assert set(GROUPS) <= set(seconds) and all(isinstance(s, float | int) and s >= 0 for s in seconds.values())
