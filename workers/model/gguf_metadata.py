"""A GGUF file's metadata alone: the same key-values (tokenizer, chat template, architecture), no tensors.

A gateway reads only a version's tokenizer from its weights file (workers/serve/tokenizer.py), so the gateway
image replaces each packaged GGUF file with this copy of it, a few MB instead of the model's weights:
    python -m workers.model.gguf_metadata FILE.gguf...     # each file rewritten in place
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import gguf


def write_metadata_only(source: Path, out: Path) -> Path:
    """`out`: `source`'s key-values with no tensors (written beside `out`, then renamed over it)."""
    reader = gguf.GGUFReader(str(source))
    arch = str(reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    fd, tmp = tempfile.mkstemp(dir=Path(out).parent, suffix=".gguf.tmp")
    os.close(fd)
    try:
        writer = gguf.GGUFWriter(tmp, arch=arch, endianess=reader.endianess)
        for field in reader.fields.values():
            # GGUF.* are the reader's view of the header; the writer writes the architecture itself.
            if field.name.startswith("GGUF.") or field.name == gguf.Keys.General.ARCHITECTURE:
                continue
            kind = field.types[0]
            sub_type = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(field.name, field.contents(), kind, sub_type=sub_type)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        writer.close()
        shutil.copymode(source, tmp)  # not mkstemp's 0600: the image's user reads it
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return Path(out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m workers.model.gguf_metadata FILE.gguf...")
    for name in sys.argv[1:]:
        before = Path(name).stat().st_size
        write_metadata_only(Path(name), Path(name))
        print(f"{name}: {before / 1e6:.1f} MB -> {Path(name).stat().st_size / 1e6:.1f} MB (metadata only)")
