"""The one-pass GGUF header reader against the `gguf` package's own reader, on the real model and on a small
file written by the package's writer: the same key-values (values and Python types) and the same tensors."""
import gguf
import numpy as np
import pytest

from workers.model.gguf_file import read_gguf_file


def _same_as_the_packages_reader(path):
    ours, theirs = read_gguf_file(path), gguf.GGUFReader(str(path))
    want = {name: field.contents() for name, field in theirs.fields.items()}
    assert list(ours.metadata) == list(want)
    assert [k for k in want if ours.metadata[k] != want[k] or type(ours.metadata[k]) is not type(want[k])] == []
    assert [t.name for t in ours.tensors] == [t.name for t in theirs.tensors]
    for a, b in zip(ours.tensors, theirs.tensors, strict=True):
        assert a.tensor_type == b.tensor_type and a.shape == tuple(int(d) for d in b.shape)
        assert a.data.dtype == b.data.dtype and np.array_equal(a.data, np.asarray(b.data)), a.name


def test_the_real_model_reads_as_the_package_reads_it(gguf_path):
    _same_as_the_packages_reader(gguf_path)


def test_every_value_type_and_a_quantized_tensor(tmp_path):
    path = tmp_path / "small.gguf"
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_uint32("a.u32", 7)
    writer.add_int32("a.i32", -7)
    writer.add_float32("a.f32", 0.5)
    writer.add_uint64("a.u64", 2**40)
    writer.add_bool("a.bool", True)
    writer.add_string("a.str", "ünïcödé")
    writer.add_array("a.strs", ["x", "", "yz"])
    writer.add_array("a.ints", [1, 2, 3])
    writer.add_array("a.floats", [0.25, -1.5])
    writer.add_tensor("f32", np.arange(12, dtype=np.float32).reshape(3, 4))
    q = gguf.quants.quantize(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32), gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("q8", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    _same_as_the_packages_reader(path)


def test_not_a_gguf_file_is_refused(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"not a model file at all, just bytes")
    with pytest.raises(ValueError, match="not a GGUF file"):
        read_gguf_file(path)
