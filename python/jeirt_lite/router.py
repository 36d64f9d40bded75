"""The Router: question texts in, which LLM will answer correctly out."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from . import kernels
from .artifact import Artifact, load_artifact, save_artifact
from .encoder import DEFAULT_BATCH_SIZE, OnnxEncoder, check_texts
from .errors import JeirtError
from .results import RouteResult

PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_ROUTER_PATH = Path(__file__).parent / "default_router"

# Manifest fields that save_artifact writes itself; everything else is carried over by Router.save.
_STANDARD_FIELDS = {
    "format", "format_version", "package_version", "label", "dim", "llms", "encoder", "files", "training", "metrics",
}


def usable_cores() -> int:
    """Cores this process may run on (respects CPU affinity, e.g. in containers pinned to a subset)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def resolve_threads(threads: Optional[int]) -> int:
    if threads is None:
        return usable_cores()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise JeirtError(f"threads must be a positive integer or None (all cores), got {threads!r}")
    return threads


class Router:
    """Predicts, for any question text, which LLMs will answer it correctly.

    A router holds an encoder (tokenizer + ONNX graph: text -> question vector q in R^d) and a table of LLM vectors
    m (K x d). P(LLM answers correctly) = sigmoid(q.m/|q| - |q|): the direction of q is the question's subject
    matter, its norm its difficulty.

    Example:
        >>> from jeirt_lite import Router
        >>> router = Router.load()                     # the router shipped with the package
        >>> router.route(["What is the derivative of x**3?"], k=2)[0]   # doctest: +SKIP
        [('Meta-Llama-3.1-70B-Instruct', 0.91), ('gemma-2-27b-it', 0.88)]
    """

    def __init__(self, artifact: Artifact, *, threads: Optional[int] = None):
        self._artifact = artifact
        self._llm_vectors = artifact.llm_vectors
        self._threads = resolve_threads(threads)
        # One setting sizes both ONNX Runtime's pool and the Rust kernels' pool so they never fight for cores.
        self._encoder = OnnxEncoder(
            artifact.tokenizer_path, artifact.encoder_path, artifact.encoder, artifact.dim, self._threads
        )

    @classmethod
    def load(cls, path: Optional[PathLike] = None, *, threads: Optional[int] = None) -> "Router":
        """Load a router folder (`None`: the default router that ships inside the package).

        Args:
            path: a folder written by `Router.save` or by training.
            threads: cores for encoding and scoring; None uses every core this process may run on.

        Raises:
            JeirtError: the folder is missing, incomplete, corrupt or inconsistent; the message names the file.
        """
        return cls(load_artifact(DEFAULT_ROUTER_PATH if path is None else Path(path)), threads=threads)

    # -- what the router holds ---------------------------------------------------------------------------------

    @property
    def llms(self) -> tuple[str, ...]:
        """LLM names in table order (the columns of `predict_proba`)."""
        return self._artifact.llm_names

    @property
    def dim(self) -> int:
        """d, the dimension of the joint question/LLM space."""
        return self._artifact.dim

    @property
    def llm_vectors(self) -> np.ndarray:
        """The (K, d) float32 table of LLM vectors (read-only)."""
        return self._llm_vectors

    @property
    def manifest(self) -> Mapping[str, Any]:
        """The parsed router.json: encoder description, training summary, metrics."""
        return self._artifact.manifest

    @property
    def path(self) -> Path:
        return self._artifact.path

    @property
    def threads(self) -> int:
        return self._threads

    def __repr__(self) -> str:
        label = self.manifest.get("label")
        note = f", label={label!r}" if label else ""
        return f"Router(path={str(self.path)!r}, llms={len(self.llms)}, dim={self.dim}{note})"

    # -- texts -------------------------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str], *, batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
        """Question vectors (N, d) float32 for a list of texts, in input order."""
        return self._encoder.encode(check_texts(texts), batch_size=batch_size)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """P(correct) (N, K) float32 for every text and every LLM."""
        return self.predict_proba_vectors(self.embed(texts))

    def route(self, texts: Sequence[str], k: int = 1) -> RouteResult:
        """The k LLMs most likely to answer each text correctly, best first (ties: lower table index)."""
        return self.route_vectors(self.embed(texts), k=k)

    def difficulty(self, texts: Sequence[str]) -> np.ndarray:
        """Difficulty of each text: the norm of its question vector (N,) float32; larger is harder."""
        return self.difficulty_vectors(self.embed(texts))

    def forecast(self, texts: Sequence[str]) -> dict[str, float]:
        """Expected accuracy of each LLM on a question bank: the mean P(correct) over the texts."""
        return self.forecast_vectors(self.embed(texts))

    # -- precomputed question vectors ----------------------------------------------------------------------------

    def predict_proba_vectors(self, vectors: np.ndarray) -> np.ndarray:
        """`predict_proba` for question vectors (N, d) embedded elsewhere."""
        return kernels.probabilities(self._check_vectors(vectors), self._llm_vectors, threads=self._threads)

    def route_vectors(self, vectors: np.ndarray, k: int = 1) -> RouteResult:
        """`route` for question vectors (N, d) embedded elsewhere."""
        indices, probabilities = kernels.top_k(
            self._check_vectors(vectors), self._llm_vectors, k, threads=self._threads
        )
        return RouteResult(indices=indices, probabilities=probabilities, llm_names=self.llms)

    def difficulty_vectors(self, vectors: np.ndarray) -> np.ndarray:
        """`difficulty` for question vectors (N, d) embedded elsewhere."""
        questions = self._check_vectors(vectors)
        norms = np.linalg.norm(questions, axis=1).astype(np.float32)
        bad = np.flatnonzero(~np.isfinite(norms))
        if bad.size:
            raise JeirtError(f"question row {int(bad[0])} contains NaN or inf")
        return norms

    def forecast_vectors(self, vectors: np.ndarray) -> dict[str, float]:
        """`forecast` for question vectors (N, d) embedded elsewhere."""
        means = kernels.mean_probability(self._check_vectors(vectors), self._llm_vectors, threads=self._threads)
        return {name: float(p) for name, p in zip(self.llms, means.tolist())}

    def _check_vectors(self, vectors: np.ndarray) -> np.ndarray:
        array = np.asarray(vectors)
        if array.ndim != 2 or array.shape[1] != self.dim:
            raise JeirtError(f"question vectors must have shape (N, {self.dim}), got {array.shape}")
        if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
            raise JeirtError(f"question vectors must be numeric, got dtype {array.dtype}")
        return np.ascontiguousarray(array, dtype=np.float32)

    # -- persistence -------------------------------------------------------------------------------------------

    def save(self, path: PathLike, *, overwrite: bool = False) -> Path:
        """Write this router as a folder, atomically (a temporary folder renamed into place)."""
        manifest = self.manifest
        return save_artifact(
            path,
            llm_names=self.llms,
            llm_vectors=self._llm_vectors,
            tokenizer_json=self._artifact.tokenizer_path,
            encoder_onnx=self._artifact.encoder_path,
            encoder=manifest["encoder"],
            training=manifest.get("training"),
            metrics=manifest.get("metrics"),
            label=manifest.get("label"),
            extra={key: value for key, value in manifest.items() if key not in _STANDARD_FIELDS},
            overwrite=overwrite,
        )
