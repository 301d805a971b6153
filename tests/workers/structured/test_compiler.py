import threading

import pytest

from tests.workers.engine.fakes import EOS, FakeTokenizer
from workers.structured import StructuredOutput
from workers.structured.bitmask import unpack
from workers.structured.compiler import GrammarCompiler

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
    compiler = GrammarCompiler(FakeTokenizer(), cache_size=2)
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
