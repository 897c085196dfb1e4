"""The shipped embedding model as the CLI sees it: loaded early by ``ccmem serve`` and its files
checked by ``ccmem doctor``. The CLI never imports the engine; this is its one door to the
model's files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..engine import onnx_model
from ..errors import ConfigError

#: ``embedder.provider`` of the shipped model.
SHIPPED_PROVIDER = "onnx-minilm"


def uses_shipped_model(settings: Settings) -> bool:
    return settings.embedder.provider == SHIPPED_PROVIDER


def preload(settings: Settings) -> None:
    """Start loading the shipped model in the background (restart time), when it is used."""
    if uses_shipped_model(settings):
        onnx_model.preload()


@dataclass(frozen=True)
class ModelFile:
    name: str
    path: Path | None
    #: Why the file is missing or does not match its pinned sha256; None when it is good.
    problem: str | None


def model_files() -> list[ModelFile]:
    """The shipped model, the int8 model built from it and the tokenizer, each checked against
    its pinned sha256."""
    files = []
    for name, locate, digest in (
        ("shipped model", onnx_model.source_model_path, onnx_model.SOURCE_SHA256),
        ("embedding model", onnx_model.default_model_path, onnx_model.MODEL_SHA256),
        ("tokenizer", onnx_model.default_tokenizer_path, onnx_model.TOKENIZER_SHA256),
    ):
        try:
            path = locate()
            onnx_model.verify_file(path, digest)
        except ConfigError as exc:
            files.append(ModelFile(name, None, exc.message))
            continue
        files.append(ModelFile(name, path, None))
    return files
