"""Structured output on the real SmolLM2 model: every schema, greedy and sampled, parses and validates."""
import json
import re

import jsonschema
import pytest

from workers.sampling_params import SamplingParams
from workers.structured import StructuredOutput

pytestmark = pytest.mark.model


def _str(n: int) -> dict:
    return {"type": "string", "maxLength": n}


def _object(required: list[str], **properties) -> dict:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


# name -> (question, schema). Small values: each run stays within a few dozen tokens.
SCHEMAS = {
    "person": ("Describe a person as JSON.",
               _object(["name", "age"], name=_str(24), age={"type": "integer", "minimum": 0, "maximum": 120})),
    "product": ("Describe a product for sale as JSON.",
                _object(["title", "price", "in_stock"], title=_str(32), price={"type": "number", "minimum": 0},
                        in_stock={"type": "boolean"})),
    "enum": ("What colour is the sky? Answer as JSON.",
             _object(["colour", "confidence"], colour={"enum": ["red", "green", "blue"]},
                     confidence={"type": "number", "minimum": 0, "maximum": 1})),
    "array": ("Give tags for a blog post about cooking, as JSON.",
              _object(["tags"], tags={"type": "array", "items": _str(16), "minItems": 1, "maxItems": 3})),
    "nested": ("Give an address as JSON.",
               _object(["address", "zip"], address=_object(["street", "city"], street=_str(32), city=_str(24)),
                       zip={"type": "string", "pattern": "^[0-9]{5}$"})),
    "array_of_objects": ("List two items of a grocery order as JSON.",
                         _object(["items"], items={"type": "array", "maxItems": 2, "items": _object(
                             ["name", "qty"], name=_str(16), qty={"type": "integer", "minimum": 1, "maximum": 12})})),
    "optional": ("Describe a book as JSON.",
                 _object(["title", "year"], title=_str(32), year={"type": "integer", "minimum": 1000, "maximum": 2100},
                         subtitle=_str(24))),
    "tool_arguments": ("What's the weather in Paris? Call the weather tool with JSON arguments.",
                       _object(["location", "unit"], location=_str(32), unit={"enum": ["celsius", "fahrenheit"]})),
    "top_level_array": ("List a few small prime numbers as a JSON array.",
                        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1000},
                         "minItems": 1, "maxItems": 4}),
}
OBJECT_QUESTION = "Give a JSON object with a name and an age."
MODES = {"greedy": dict(temperature=0), "sampled": dict(temperature=1.0, seed=7)}


def _chat(question: str) -> list[dict]:
    return [{"role": "user", "content": question}]


@pytest.mark.parametrize("mode", list(MODES))
def test_every_schema_and_json_object_parse_and_validate(real_llm, mode):
    specs = {name: (q, StructuredOutput("json_schema", s)) for name, (q, s) in SCHEMAS.items()}
    specs["json_object"] = (OBJECT_QUESTION, StructuredOutput("json_object"))
    specs["regex"] = ("Give a phone number.", StructuredOutput("regex", r"[0-9]{3}-[0-9]{4}"))
    specs["grammar"] = ("Is the sky blue?", StructuredOutput("grammar", 'start: "yes" | "no"'))
    outputs = real_llm.chat([_chat(q) for q, _ in specs.values()],
                            [SamplingParams(max_tokens=96, structured=spec, **MODES[mode])
                             for _, spec in specs.values()])
    grammars = real_llm.engine.input_processor.grammars
    for (name, (_, spec)), out in zip(specs.items(), outputs):
        c = out.outputs[0]
        matcher = grammars.compile(spec).matcher()
        assert matcher.consume_tokens(c.token_ids), (name, c.text)  # every token, EOS included, as the grammar allows
        if name == "json_object" and mode == "sampled" and c.finish_reason == "length":
            continue  # any object may run on; at temperature 1 this model's sometimes does (seed 7 here)
        assert c.finish_reason == "stop", (name, c.text)  # ended by EOS, right after a complete value
        if name == "regex":
            assert re.fullmatch(r"[0-9]{3}-[0-9]{4}", c.text)
        elif name == "grammar":
            assert c.text in ("yes", "no")
        elif name == "json_object":
            assert isinstance(json.loads(c.text), dict)
        else:
            jsonschema.validate(json.loads(c.text), SCHEMAS[name][1])


def test_n_completions_are_each_valid(real_llm):
    question, schema = SCHEMAS["person"]
    params = SamplingParams(n=2, max_tokens=64, temperature=1.0, seed=11,
                            structured=StructuredOutput("json_schema", schema))
    out = real_llm.chat(_chat(question), params)[0]
    assert len(out.outputs) == 2
    for c in out.outputs:
        assert c.finish_reason == "stop"
        jsonschema.validate(json.loads(c.text), schema)


def test_a_plain_request_beside_structured_ones_is_token_identical(real_llm):
    plain = SamplingParams(max_tokens=12, temperature=0)
    alone = real_llm.chat(_chat("Name three primary colours."), plain)[0].outputs[0].token_ids
    question, schema = SCHEMAS["nested"]
    mixed = real_llm.chat([_chat(question), _chat("Name three primary colours."), _chat(OBJECT_QUESTION)],
                          [SamplingParams(max_tokens=48, temperature=0,
                                          structured=StructuredOutput("json_schema", schema)),
                           plain,
                           SamplingParams(max_tokens=48, temperature=1.0, seed=2,
                                          structured=StructuredOutput("json_object"))])
    assert mixed[1].outputs[0].token_ids == alone


def test_an_invalid_schema_names_the_field_and_queues_nothing(real_llm):
    bad = SamplingParams(structured=StructuredOutput("json_schema", {"type": "object", "required": 3}))
    with pytest.raises(ValueError, match=r"^structured: invalid json_schema"):
        real_llm.chat(_chat("x"), bad)
    assert not real_llm.engine.has_unfinished_requests()
