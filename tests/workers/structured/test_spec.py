import pytest

from workers.sampling_params import SamplingParams
from workers.structured import StructuredOutput

SCHEMA = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}, "required": ["a"]}


def test_kinds_and_their_values():
    assert StructuredOutput("json_object").key == ("json_object", "")
    assert StructuredOutput("regex", r"\d+").value == r"\d+"
    assert StructuredOutput("grammar", 'start: "yes" | "no"').kind == "grammar"
    spec = StructuredOutput("json_schema", SCHEMA)
    assert spec.value == SCHEMA and spec.value is not SCHEMA  # its own copy


@pytest.mark.parametrize("kind, value, message", [
    ("xml", None, "structured.kind"),
    ("json_object", {"type": "object"}, "structured.value"),
    ("json_schema", None, "structured.value"),
    ("json_schema", '{"type": "object"}', "structured.value"),
    ("json_schema", {"x": float("nan")}, "structured.value"),
    ("json_schema", {"x": {1, 2}}, "structured.value"),
    ("regex", "", "structured.value"),
    ("grammar", 3, "structured.value"),
    ("regex", "a" * 100_001, "structured.value"),
])
def test_a_bad_spec_is_a_value_error_naming_the_field(kind, value, message):
    with pytest.raises(ValueError, match=message):
        StructuredOutput(kind, value)


def test_the_key_keeps_property_order_and_ignores_later_edits_of_the_callers_dict():
    schema = {"type": "object", "properties": {"a": {}, "b": {}}}
    spec = StructuredOutput("json_schema", schema)
    schema["properties"]["c"] = {}
    assert spec == StructuredOutput("json_schema", {"type": "object", "properties": {"a": {}, "b": {}}})
    reordered = StructuredOutput("json_schema", {"type": "object", "properties": {"b": {}, "a": {}}})
    assert reordered.key != spec.key  # properties are generated in the schema's order


def test_wire_round_trip_and_sampling_params_take_the_dict():
    spec = StructuredOutput("json_schema", SCHEMA)
    assert StructuredOutput.from_wire(spec.to_wire()) == spec
    params = SamplingParams(structured={"kind": "json_object"})
    assert params.structured == StructuredOutput("json_object")
    assert SamplingParams().structured is None


@pytest.mark.parametrize("wire", [{"value": {}}, {"kind": "json_object", "extra": 1}, "json_object", 3])
def test_a_malformed_wire_dict_names_the_field(wire):
    with pytest.raises(ValueError, match="structured"):
        SamplingParams(structured=wire)


def test_min_tokens_cannot_be_combined_with_structured_output():
    with pytest.raises(ValueError, match="min_tokens"):
        SamplingParams(min_tokens=2, structured={"kind": "json_object"})


def test_openai_response_format():
    assert StructuredOutput.from_response_format(None) is None
    assert StructuredOutput.from_response_format({"type": "text"}) is None
    assert StructuredOutput.from_response_format({"type": "json_object"}) == StructuredOutput("json_object")
    rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA, "strict": True}}
    assert StructuredOutput.from_response_format(rf) == StructuredOutput("json_schema", SCHEMA)
    with pytest.raises(ValueError, match=r"response_format.json_schema.schema"):
        StructuredOutput.from_response_format({"type": "json_schema", "json_schema": {"name": "x"}})
    with pytest.raises(ValueError, match=r"response_format.type"):
        StructuredOutput.from_response_format({"type": "yaml"})
