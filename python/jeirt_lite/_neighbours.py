"""The router's neighbour votes: what the LLMs answered on the training questions most like a new one.

The joint geometry gives every question a smooth position in R^d; a question that nearly repeats a training question
(the same problem with other numbers, a reworded item) is better predicted by the answers the LLMs gave there. The
router keeps, for the questions it learned from, their encoder features (unit rows) and the LLMs' answers, and adds
to each LLM's logit a weighted vote of its answers on the k nearest of them:

    p_knn = (Σ_j w_j·y_j + α·prior) / (Σ_j w_j + α)   over the first k neighbours (cosine on the features) that
                                                       this LLM answered, w_j = 1 or exp((s_j − s_max)/τ)
    logit = q·m/‖q‖ − ‖q‖ + weight · log(p_knn / (1 − p_knn))     (then the router's calibration)

k, α, τ, the weight and the space the neighbours are found in are fitted by `python -m jeirt_lite_training fit` on
held-out questions (jeirt_lite_training.neighbour_blend), which keeps the votes only when they lower the held-out
log-loss. The space: a few principal directions of the centred features (the "short space": `(unit features -
centre) · projection`, 16 or 32 dimensions instead of hundreds), whose search costs about a fifth of the full
features', or the features themselves where the held-out parts find those better (docs/research/neighbours.md,
"Short keys"). Routers written before the short space hold full-width keys. Stored in the router folder as

    neighbours.safetensors   "keys" (n, d) float16 unit rows (short-space rows, or the features when there is no
                             projection), "answers" (n, K) int8 (1 right, 0 wrong, -1 not asked), "prior" (K,)
                             float32, and for a short space "centre" (p,) and "projection" (p, d) float32
    router.json "neighbours": {"llms": [K names, column order], "k", "smoothing" (α), "temperature" (τ or null),
                               "weight", "feature_dim" (p)}

An LLM without a column (one added later with add_llm) gets no vote.

At run time the search runs in Rust (`_core.VoteTable`, rust/src/votes/: no Python in the loop, the GIL
released), which maps each query to the short space itself. In the short space every key is scored on all d
components and the 2k best are ranked exactly. Full-width keys take a coarse pass first: every
stored question scored on the keys' top `COARSE_DIMS` principal directions (computed here at load), the best
`COARSE_CANDIDATES` per query kept and ranked by the exact float32 similarity; where that shortlist holds a
query's true 2k nearest, its votes are the exact ones (docs/research/neighbours.md measures how often).
`neighbour_sums` below, in NumPy, is the reference (tests hold the kernel's exact path to it) and what training
uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np

from . import _core
from ._alignment import unit_rows as _unit_rows
from ._errors import JeirtError
from ._feature_offsets import checked_features
from ._limits import check_finite_rows
from ._manifest import block_llms, block_tensors, check_feature_width

NEIGHBOURS_FILE = "neighbours.safetensors"
NEIGHBOURS_ROLE = "neighbours"
KEYS_TENSOR, ANSWERS_TENSOR, PRIOR_TENSOR = "keys", "answers", "prior"
CENTRE_TENSOR, PROJECTION_TENSOR = "centre", "projection"  # the short space, when the router has one
NOT_ASKED = -1
# Neighbours ranked per query before each LLM takes its first k that it answered: twice k, so an LLM that skipped
# some of the nearest questions still finds k answers (the public matrices are 79% to 99.5% observed).
CANDIDATES_PER_K = 2
QUERY_CHUNK = 256  # queries per similarity block: bounds memory at QUERY_CHUNK x n floats
# The Rust search's coarse pass: principal directions of the keys it scores every key on, and keys kept per query
# for the exact ranking (docs/research/neighbours.md has the measured speed and agreement of these and other settings).
COARSE_DIMS = 128
COARSE_CANDIDATES = 768
_CLIP = 1e-6


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Float32 unit rows (the similarity search runs in float32)."""
    return _unit_rows(x, np.float32)


def short_rows(features: np.ndarray, centre: np.ndarray, projection: np.ndarray) -> np.ndarray:
    """Float32 unit rows of the features in a short space: `(unit features - centre) · projection`, made unit."""
    return unit_rows((unit_rows(np.asarray(features, dtype=np.float32)) - centre) @ projection)


def neighbour_sums(
    keys: np.ndarray, answers: np.ndarray, queries: np.ndarray, ks: Sequence[int], temperature: Optional[float],
    threads: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """For each k in `ks`: per query and LLM, the weighted sum of answers and the sum of weights over the first k
    neighbours (nearest first, by cosine of unit rows) that the LLM answered. Shapes (len(ks), n_queries, K).

    keys (n, p) unit rows; answers (n, K) int8 (NOT_ASKED where unobserved); queries (m, p) unit rows. `threads`:
    blocks of queries at once (numpy releases the GIL in each step)."""
    n_llms = answers.shape[1]
    sums = np.zeros((len(ks), len(queries), n_llms), dtype=np.float32)
    counts = np.zeros_like(sums)
    if len(keys) == 0 or len(queries) == 0:
        return sums, counts
    n_candidates = min(len(keys), CANDIDATES_PER_K * max(ks))

    def block(start: int) -> None:
        chunk = queries[start:start + QUERY_CHUNK]
        # A lone query would take BLAS's matrix-vector product, whose sums round differently from the matrix
        # product of a larger block: near-tied neighbours then swap, and a question's vote would depend on what
        # else was scored with it (`jeirt-lite serve` batches requests). Two rows keep every block on one product.
        sim = (np.concatenate([chunk, chunk]) @ keys.T)[:1] if len(chunk) == 1 else chunk @ keys.T
        top = np.argpartition(-sim, n_candidates - 1, axis=1)[:, :n_candidates]
        top = np.take_along_axis(top, np.argsort(-np.take_along_axis(sim, top, axis=1), axis=1, kind="stable"), axis=1)
        top_sim = np.take_along_axis(sim, top, axis=1)
        weight = (np.ones_like(top_sim) if temperature is None
                  else np.exp((top_sim - top_sim[:, :1]) / temperature))[:, :, None]
        votes = answers[top]  # (block, candidates, K)
        seen = votes != NOT_ASKED
        rank = np.cumsum(seen, axis=1, dtype=np.int16)  # candidates <= 2 x the largest k: well inside int16
        hits = votes == 1
        for i, k in enumerate(ks):
            take = np.where(seen & (rank <= k), weight, np.float32(0))
            sums[i, start:start + len(top)] = np.where(hits, take, np.float32(0)).sum(axis=1)
            counts[i, start:start + len(top)] = take.sum(axis=1)

    starts = range(0, len(queries), QUERY_CHUNK)
    if threads > 1 and len(starts) > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(starts))) as pool:
            list(pool.map(block, starts))
    else:
        for start in starts:
            block(start)
    return sums, counts


def coarse_projection(keys: np.ndarray, dims: int = COARSE_DIMS) -> np.ndarray:
    """(p, dims) float32: the top `dims` principal directions of the unit keys (eigenvectors of keys^T keys, so
    the dominant common direction of the features comes first); (p, 0) when the table is small enough that
    scoring every key exactly costs about as much as the coarse pass, or p <= dims."""
    if len(keys) <= COARSE_CANDIDATES or keys.shape[1] <= dims:
        return np.zeros((keys.shape[1], 0), dtype=np.float32)
    k64 = keys.astype(np.float64)
    values, vectors = np.linalg.eigh(k64.T @ k64)
    order = np.argsort(-values, kind="stable")[:dims]
    return np.ascontiguousarray(vectors[:, order], dtype=np.float32)


def smoothed(sums: np.ndarray, counts: np.ndarray, prior: np.ndarray, smoothing: float) -> np.ndarray:
    """(Σ w·y + α·prior) / (Σ w + α), kept inside (0, 1)."""
    out: np.ndarray = np.clip((sums + smoothing * prior) / (counts + smoothing), _CLIP, 1.0 - _CLIP)
    return out


def vote_logits(p: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.log(p) - np.log1p(-p)
    return out


@dataclass(frozen=True)
class NeighbourVotes:
    """The neighbour table of a router and its fitted vote (see the module docstring)."""

    llms: tuple[str, ...]
    keys: np.ndarray  # (n, d) float16 unit rows, as stored (d = p without a short space)
    answers: np.ndarray  # (n, K) int8
    prior: np.ndarray  # (K,) float32
    k: int
    smoothing: float
    temperature: Optional[float]
    weight: float
    centre: Optional[np.ndarray] = None  # (p,) float32: the short space's origin in feature space; None: no space
    projection: Optional[np.ndarray] = None  # (p, d) float32: its directions

    @property
    def feature_dim(self) -> int:
        return int(self.keys.shape[1] if self.projection is None else self.projection.shape[0])

    @property
    def short_space(self) -> bool:
        return self.projection is not None

    def query_rows(self, features: np.ndarray) -> np.ndarray:
        """Float32 unit rows the keys are compared with: the features mapped to the short space, or the features."""
        if self.projection is None or self.centre is None:
            return unit_rows(np.asarray(features, dtype=np.float32))
        return short_rows(features, self.centre, self.projection)

    def reference_sums(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What `sums` gives, from the NumPy search (`neighbour_sums`, the reference) over every stored question."""
        sums, counts = neighbour_sums(self._unit_keys(), self.answers, self.query_rows(features), (self.k,),
                                      self.temperature)
        return sums[0], counts[0]

    def manifest_block(self) -> dict[str, Any]:
        return {"llms": list(self.llms), "k": self.k, "smoothing": self.smoothing, "temperature": self.temperature,
                "weight": self.weight, "feature_dim": self.feature_dim}

    def tensors(self) -> dict[str, np.ndarray]:
        out = {KEYS_TENSOR: self.keys, ANSWERS_TENSOR: self.answers, PRIOR_TENSOR: self.prior}
        if self.centre is not None and self.projection is not None:
            out.update({CENTRE_TENSOR: self.centre, PROJECTION_TENSOR: self.projection})
        return out

    def probabilities(self, features: np.ndarray, threads: int = 1, *, exact: bool = False) -> np.ndarray:
        """(N, K) the smoothed neighbour vote of each LLM of the table, for finite features (N, p), by the Rust
        search (`exact`: every stored question scored exactly)."""
        sums, counts = self.sums(features, threads, exact=exact)
        return smoothed(sums, counts, self.prior, self.smoothing)

    def sums(self, features: np.ndarray, threads: int = 1, *, exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(weighted sums of answers, sums of weights), each (N, K) float32: what `neighbour_sums` gives for this
        table's k, from the Rust search."""
        queries = np.ascontiguousarray(features, dtype=np.float32)
        candidates = len(self.keys) if exact else self.candidates()
        return self.kernel_table().sums(queries, self.k, self.temperature, candidates, threads)

    def candidates(self) -> int:
        """Keys the Rust search keeps per query from its first pass: the window itself in the short space (that
        pass already scores every component, so it ranks exactly), `COARSE_CANDIDATES` for full-width keys."""
        return CANDIDATES_PER_K * self.k if self.short_space else COARSE_CANDIDATES

    def kernel_table(self) -> _core.VoteTable:
        """The Rust search's copy of the table, built on first use: in the short space, its first pass over every
        component (an identity projection) and the query map; else the keys' principal directions."""
        cached = self.__dict__.get("_kernel_table")
        if cached is None:
            keys, answers = self._unit_keys(), np.ascontiguousarray(self.answers)
            if self.centre is not None and self.projection is not None:
                cached = _core.VoteTable(keys, answers, np.eye(keys.shape[1], dtype=np.float32),
                                         np.ascontiguousarray(self.centre), np.ascontiguousarray(self.projection))
            else:
                cached = _core.VoteTable(keys, answers, coarse_projection(keys))
            object.__setattr__(self, "_kernel_table", cached)  # derived; the dataclass fields are unchanged
        return cached

    def _unit_keys(self) -> np.ndarray:
        cached = self.__dict__.get("_keys32")
        if cached is None:
            cached = unit_rows(self.keys.astype(np.float32))
            object.__setattr__(self, "_keys32", cached)  # a derived copy; the dataclass fields are unchanged
        return cached

    def offsets(
        self, features: Optional[np.ndarray], llm_names: Sequence[str], rows: int, threads: int = 1
    ) -> np.ndarray:
        """(N, len(llm_names)) float32 logit offsets; zero for an LLM without a column."""
        f = checked_features(features, rows, self.feature_dim, "this router adds its training questions' answers "
                             "(neighbour votes) from the encoder's features")
        check_finite_rows(f, "features")
        return self.offsets_from_sums(self.sums(f, threads), llm_names, rows)

    def offsets_from_sums(
        self, sums: tuple[np.ndarray, np.ndarray], llm_names: Sequence[str], rows: int
    ) -> np.ndarray:
        """`offsets` from the search's (sums, weights) of this table, computed before (`score`'s background jobs)."""
        out = np.zeros((rows, len(llm_names)), dtype=np.float32)
        column = {name: j for j, name in enumerate(self.llms)}
        wanted = [(i, column[name]) for i, name in enumerate(llm_names) if name in column]
        if wanted and rows:
            votes = self.weight * vote_logits(smoothed(sums[0], sums[1], self.prior, self.smoothing))
            out[:, [i for i, _ in wanted]] = votes[:, [j for _, j in wanted]]
        return out

    def request(self) -> tuple[_core.VoteTable, int, Optional[float], int]:
        """What a background encoding job votes with (`StaticEncoder.encode_start`)."""
        return self.kernel_table(), self.k, self.temperature, self.candidates()

    def restricted(self, names: Sequence[str]) -> Optional[NeighbourVotes]:
        """Only the columns of LLMs in `names`; None when none is left."""
        keep = [j for j, name in enumerate(self.llms) if name in set(names)]
        if not keep:
            return None
        return replace(self, llms=tuple(self.llms[j] for j in keep), answers=self.answers[:, keep],
                       prior=self.prior[keep])

    def renamed(self, names: Mapping[str, str]) -> NeighbourVotes:
        return replace(self, llms=tuple(str(names.get(name, name)) for name in self.llms))


def parse_neighbours(
    block: Any, tensors: Mapping[str, np.ndarray], llm_names: Sequence[str], feature_dim: Optional[int], where: str
) -> NeighbourVotes:
    """Validate the manifest block and the tensors against the router's LLMs and its encoder's feature size."""
    names = block_llms(block, llm_names, "neighbours", where)
    k, smoothing, temperature, weight = (block.get(f) for f in ("k", "smoothing", "temperature", "weight"))
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise JeirtError(f"{where}: neighbours.k must be a positive integer, got {k!r}")
    for field, value, low in (("smoothing", smoothing, 0.0), ("weight", weight, 0.0)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= low:
            raise JeirtError(f"{where}: neighbours.{field} must be a finite number > 0, got {value!r}")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not np.isfinite(temperature) or temperature <= 0):
        raise JeirtError(f"{where}: neighbours.temperature must be null or a finite number > 0, got {temperature!r}")
    keys, answers, prior = block_tensors(tensors, (KEYS_TENSOR, ANSWERS_TENSOR, PRIOR_TENSOR), where)
    if keys.dtype != np.float16 or answers.dtype != np.int8 or prior.dtype != np.float32:
        raise JeirtError(f"{where}: keys must be float16, answers int8 and prior float32")
    if keys.ndim != 2 or answers.shape != (keys.shape[0], len(names)) or prior.shape != (len(names),):
        raise JeirtError(
            f"{where}: keys {keys.shape}, answers {answers.shape} and prior {prior.shape} must be (n, p), "
            f"(n, {len(names)}) and ({len(names)},)"
        )
    centre, projection = _short_space(tensors, keys.shape[1], where)
    check_feature_width(keys.shape[1] if projection is None else projection.shape[0], feature_dim, "neighbours", where)
    if not np.isfinite(keys).all() or not ((answers >= NOT_ASKED) & (answers <= 1)).all():
        raise JeirtError(f"{where}: keys must be finite and answers -1, 0 or 1")
    if not (np.isfinite(prior).all() and ((prior > 0) & (prior < 1)).all()):
        raise JeirtError(f"{where}: prior must hold probabilities strictly between 0 and 1")
    for array in (keys, answers, prior, centre, projection):
        if array is not None:
            array.setflags(write=False)
    return NeighbourVotes(tuple(names), keys, answers, prior, int(k), float(smoothing),
                          None if temperature is None else float(temperature), float(weight), centre, projection)


def _short_space(
    tensors: Mapping[str, np.ndarray], short_dim: int, where: str
) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """The stored short space (centre (p,), projection (p, d) float32, both finite), or (None, None) when the
    keys are full-width features; one without the other, or shapes that disagree with the keys' d, refused."""
    centre, projection = tensors.get(CENTRE_TENSOR), tensors.get(PROJECTION_TENSOR)
    if centre is None and projection is None:
        return None, None
    if centre is None or projection is None:
        raise JeirtError(f"{where}: neighbours.safetensors holds {'centre' if projection is None else 'projection'} "
                         "without its partner: a short space needs both 'centre' and 'projection'")
    if centre.dtype != np.float32 or projection.dtype != np.float32:
        raise JeirtError(f"{where}: neighbours centre and projection must be float32")
    if centre.ndim != 1 or projection.shape != (len(centre), short_dim):
        raise JeirtError(f"{where}: neighbours centre {centre.shape} and projection {projection.shape} must be (p,) "
                         f"and (p, {short_dim}) for keys of width {short_dim}")
    if not (np.isfinite(centre).all() and np.isfinite(projection).all()):
        raise JeirtError(f"{where}: neighbours centre and projection must be finite")
    return centre, projection
