import asyncio
import threading
import time

import pytest

from tests.workers.engine.fakes import EOS, FakeTokenizer
from workers.structured import StructuredOutput
from workers.structured.bitmask import unpack
from workers.structured.compiler import CompileConfig, GrammarCompiler

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}


def allowed_after(compiled, text: str) -> list[int]:
    import torch

    matcher = compiled.matcher()
    assert matcher.consume_tokens(list(text.encode())), matcher.get_error()
    mask = torch.zeros(1, compiled.mask_words, dtype=torch.int32)
    matcher.unsafe_compute_mask_ptr(mask.data_ptr(), compiled.mask_words * 4)
    return unpack(mask)[0].nonzero().flatten().tolist()


def test_a_schema_compiles_once_and_equal_specs_share_it():
    compiler = GrammarCompiler(FakeTokenizer())
    first = compiler.compile(StructuredOutput("json_schema", PERSON))
    again = compiler.compile(StructuredOutput("json_schema", dict(PERSON)))
    assert again is first and len(compiler) == 1
    assert first.mask_words == (257 + 31) // 32 and first.eos_token_ids == (EOS,)


def test_json_is_written_with_the_usual_separators_and_ends_with_eos_only():
    compiled = GrammarCompiler(FakeTokenizer()).compile(StructuredOutput("json_schema", PERSON))
    assert allowed_after(compiled, "") == [ord("{")]
    assert allowed_after(compiled, '{"name"') == [ord(":")]
    assert allowed_after(compiled, '{"name":') == [ord(" ")]  # no free whitespace: one space, as json.dumps
    assert allowed_after(compiled, '{"name": "Al", "age": 7}') == [EOS]


def test_json_object_regex_and_grammars():
    compiler = GrammarCompiler(FakeTokenizer())
    assert allowed_after(compiler.compile(StructuredOutput("json_object")), "") == [ord("{")]
    assert allowed_after(compiler.compile(StructuredOutput("json_object")), "{}") == [EOS]
    regex = compiler.compile(StructuredOutput("regex", r"[0-9]{3}-[0-9]{2}"))
    assert allowed_after(regex, "12") == list(range(ord("0"), ord("9") + 1))
    assert allowed_after(regex, "123-45") == [EOS]
    for text in ('start: "yes" | "no"', 'root ::= "yes" | "no"'):  # Lark, GBNF
        grammar = compiler.compile(StructuredOutput("grammar", text))
        assert allowed_after(grammar, "") == [ord("n"), ord("y")]
        assert allowed_after(grammar, "ye") == [ord("s")]


@pytest.mark.parametrize("kind, value, message", [
    ("json_schema", {"type": "foo"}, "Invalid type"),
    ("json_schema", {"$ref": "#/$defs/missing"}, "missing"),
    ("json_schema", {"type": "string", "pattern": "("}, "regex"),
    ("json_schema", {"type": "integer", "minimum": 5, "maximum": 1}, "Unsatisfiable"),
    ("regex", "(ab", "regex"),
    ("grammar", "start: undefined_rule", "undefined_rule"),
    ("grammar", 'root ::= "a" (', "grammar"),
])
def test_a_spec_that_does_not_compile_is_a_value_error_naming_the_field(kind, value, message):
    compiler = GrammarCompiler(FakeTokenizer())
    with pytest.raises(ValueError, match=f"^structured: invalid {kind}: .*{message}"):
        compiler.compile(StructuredOutput(kind, value))
    assert len(compiler) == 0  # nothing cached


def test_the_cache_keeps_the_most_recently_used_specs():
    compiler = GrammarCompiler(FakeTokenizer(), CompileConfig(cache_size=2))
    specs = [StructuredOutput("regex", f"a{{{i}}}") for i in range(1, 4)]
    first = compiler.compile(specs[0])
    compiler.compile(specs[1])
    assert compiler.compile(specs[0]) is first  # now the most recent
    compiler.compile(specs[2])  # evicts specs[1]
    assert len(compiler) == 2 and compiler.compile(specs[0]) is first


def test_templates_are_copied_never_advanced_and_usable_from_another_thread():
    compiled = GrammarCompiler(FakeTokenizer()).compile(StructuredOutput("json_schema", PERSON))
    seen = []
    worker = threading.Thread(target=lambda: seen.append(allowed_after(compiled, '{"name": "A", "age": 1}')))
    worker.start()
    worker.join()
    assert seen == [[EOS]] and allowed_after(compiled, "") == [ord("{")]


@pytest.mark.parametrize("regex", ["(a{1000}){1000}", "(b{999}){1001}", "(a|aa|aaa){1000}b"])
def test_a_spec_past_the_limits_is_refused_as_too_costly_fast(regex):
    """Under llguidance's default limits `(a{1000}){1000}` cost seconds of lexer work, and each step's mask after
    it; under LIMITS it is refused at compile, in a fraction of a second, and not compiled twice."""
    compiler = GrammarCompiler(FakeTokenizer())
    compiler.compile(StructuredOutput("regex", "a"))  # the tokenizer's one-off cost, not the spec's
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"^structured: the regex is too costly to compile"):
        compiler.compile(StructuredOutput("regex", regex))
    assert time.perf_counter() - started < 2.0
    compiles = []
    compiler._compile = compiles.append  # a second compile would be seen here
    with pytest.raises(ValueError, match="too costly"):
        compiler.compile(StructuredOutput("regex", regex))
    assert compiles == [] and len(compiler) == 1


def test_a_compile_past_the_timeout_is_refused_and_kept_for_next_time():
    compiler = GrammarCompiler(FakeTokenizer(), CompileConfig(timeout_s=0.05))
    release, real = threading.Event(), compiler._compile
    compiler._compile = lambda spec: (release.wait(5), real(spec))[1]
    spec = StructuredOutput("regex", "[0-9]+")
    with pytest.raises(ValueError, match=r"^structured: the regex is too costly: it did not compile within 0.05 s"):
        compiler.compile(spec)
    release.set()
    deadline = time.monotonic() + 5
    while len(compiler) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert compiler.compile(spec).key == spec.key  # it finished in the background and was cached


async def test_compiles_run_off_the_event_loop_and_equal_specs_share_one():
    compiler = GrammarCompiler(FakeTokenizer())
    compiler.compile(StructuredOutput("regex", "a"))
    calls, real, gate = [], compiler._compile, threading.Event()

    def slow(spec):
        calls.append(spec.key)
        gate.wait(5)
        return real(spec)

    compiler._compile = slow
    spec = StructuredOutput("json_schema", PERSON)
    waiting = [asyncio.create_task(compiler.compile_async(spec)) for _ in range(3)]
    ticks = 0
    while len(calls) < 1 or ticks < 5:  # the loop keeps turning while the compile is held
        await asyncio.sleep(0.01)
        ticks += 1
    gate.set()
    first, *rest = await asyncio.gather(*waiting)
    assert calls == [spec.key] and all(r is first for r in rest)


async def test_a_caller_that_stops_waiting_does_not_cancel_a_shared_compile():
    compiler = GrammarCompiler(FakeTokenizer(), CompileConfig(timeout_s=0.05))
    gate, real = threading.Event(), compiler._compile
    compiler._compile = lambda spec: (gate.wait(5), real(spec))[1]
    spec = StructuredOutput("regex", "[a-z]+")
    with pytest.raises(ValueError, match="did not compile within"):
        await compiler.compile_async(spec)
    future = compiler.submit(spec)
    gate.set()
    assert future.result(timeout=5).key == spec.key
