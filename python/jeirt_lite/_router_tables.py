"""The state a router holds and the copies that change its set of LLMs (select, calibrate, price, rename)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Optional, TypeVar, Union

import numpy as np

from . import _core
from ._encoder import OnnxEncoder
from ._errors import JeirtError
from ._feature_offsets import FeatureCorrections
from ._limits import MAX_THREADS, check_threads
from ._llm_params import Calibration, check_costs, make_calibration
from ._manifest import Manifest, freeze, thaw
from ._neighbours import NeighbourVotes, parse_neighbours
from ._static_path import StaticEncoder, check_agreement, static_encoder_for
from .artifact import Artifact, validate_llm_table

RouterT = TypeVar("RouterT", bound="RouterTables")


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity (a container pinned to some cores) and its cgroup's CPU quota
    (a container's CPU limit, which affinity does not show: threads beyond it are throttled, not run)."""
    return max(1, _core.available_cores())


def resolve_threads(threads: Optional[int]) -> int:
    """`threads`, or every usable core for None; at most `limits.MAX_THREADS`."""
    if threads is None:
        return min(usable_cores(), MAX_THREADS)
    return check_threads(threads)


class RouterTables:
    """What a router holds (its artifact, LLM table, calibration, costs, corrections, encoder) and the copies
    that change its set of LLMs; `Router` adds encoding, scoring and persistence on top."""

    def __init__(
        self,
        artifact: Artifact,
        *,
        threads: Optional[int] = None,
        fast_path: bool = True,
        encoder: Optional[Union[OnnxEncoder, StaticEncoder]] = None,
    ):
        """A router over a loaded artifact (use `Router.load`). `encoder`: an encoder already loaded for this
        artifact's files, shared by the routers derived from one another (add_llm, select_llms, ...)."""
        self._artifact = artifact
        self._llm_vectors = artifact.llm_vectors
        self._calibration = artifact.manifest.calibration
        self._threads = resolve_threads(threads)
        # One setting sizes both ONNX Runtime's pool and the Rust kernels' pool so they never fight for cores.
        # Static routers encode in Rust (jeirt_lite._static_path) unless asked not to; the ONNX graph computes the
        # same vectors and is the path of every other router.
        self._graph: Optional[OnnxEncoder] = None  # the ONNX graph next to the fast path, made when features are asked
        if encoder is None:
            encoder = self._checked_encoders(artifact, fast_path)
        self._encoder: Union[OnnxEncoder, StaticEncoder] = encoder

    def _checked_encoders(self, artifact: Artifact, fast_path: bool) -> Union[OnnxEncoder, StaticEncoder]:
        """The encoder to use; for a static router both of its encoders, checked to agree on probe texts whichever
        is used (a folder whose graph and fast path disagree is refused, not half trusted)."""
        graph = OnnxEncoder(artifact.tokenizer_path, artifact.encoder_path, artifact.encoder, artifact.dim, self._threads)
        fast = static_encoder_for(artifact.path, artifact.manifest, artifact.tokenizer_path, artifact.dim, self._threads)
        if fast is None:
            return graph
        check_agreement(fast, graph, artifact.encoder_path)
        if not fast_path:
            return graph
        if artifact.encoder.feature_output and not fast.gives_features:
            self._graph = graph  # features come from the graph: keep the session already made
        return fast

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
    def calibration(self) -> Optional[Calibration]:
        """The per-LLM temperature and bias applied to every probability, or None (raw model output)."""
        return self._calibration

    @property
    def costs(self) -> dict[str, float]:
        """Per-LLM cost stored in the router (may cover only some LLMs; empty when none is stored)."""
        return dict(self.manifest.costs or {})

    @property
    def priced_llms(self) -> tuple[str, ...]:
        """The LLMs with a stored cost, in table order: the candidates of cost-aware routing by default."""
        costs = self.costs
        return tuple(name for name in self.llms if name in costs)

    @property
    def manifest(self) -> Manifest:
        """The validated router.json (typed fields; also a read-only mapping of its JSON): encoder description,
        training summary, metrics."""
        return self._artifact.manifest

    @property
    def path(self) -> Path:
        return self._artifact.path

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def fast_path(self) -> bool:
        """Whether texts are encoded in Rust (a static router with its static_encoder.safetensors)."""
        return isinstance(self._encoder, StaticEncoder)

    @property
    def corrections(self) -> Optional[FeatureCorrections]:
        """Onboarded LLMs' corrections on the encoder's features, or None."""
        return self._artifact.corrections

    @property
    def needs_features(self) -> bool:
        """Whether scoring reads the encoder's features besides the question vectors (onboarded LLMs'
        corrections, neighbour votes): questions encoded elsewhere then need their `features` (`EncodedQuestions`)."""
        return self.corrections is not None or self.neighbours is not None

    @property
    def neighbours(self) -> Optional[NeighbourVotes]:
        """The training questions' answers, voted by similarity into the logits (`_neighbours`), or None."""
        return self._artifact.neighbours

    def _check_vectors(self, vectors: np.ndarray) -> np.ndarray:
        array = np.asarray(vectors)
        if array.ndim != 2 or array.shape[1] != self.dim:
            raise JeirtError(f"question vectors must have shape (N, {self.dim}), got {array.shape}")
        if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
            raise JeirtError(f"question vectors must be numeric, got dtype {array.dtype}")
        return np.ascontiguousarray(array, dtype=np.float32)

    # -- changing the set of LLMs (the question side stays frozen) ----------------------------------------------

    def select_llms(self: RouterT, names: Sequence[str]) -> RouterT:
        """A router restricted to `names` (in that order), e.g. the LLMs a service actually has; what router.json
        keeps by name of the others (costs, onboarding records, corrections, neighbour votes' tallies) goes too."""
        if isinstance(names, str):
            raise JeirtError("select_llms takes a list of LLM names, not one string (wrap it: [name])")
        wanted = list(names)
        if not wanted:
            raise JeirtError("select at least one LLM")
        rows = [self.llm_index(name) for name in wanted]
        if len(set(rows)) != len(rows):
            raise JeirtError("each LLM may be selected once")
        changes: dict[str, Any] = {}
        if self._calibration is not None:
            changes["calibration"] = self._calibration.select(rows)
        if self.manifest.costs is not None:
            changes["costs"] = {name: cost for name, cost in self.costs.items() if name in wanted}
        if self.manifest.onboarded is not None:  # a record of an LLM the router lacks would be refused at load
            kept = tuple(record for record in self.manifest.onboarded if record.get("name") in wanted)
            changes["onboarded"] = kept or None  # as a router never onboarded: no empty list
        corrections = None if self.corrections is None else self.corrections.restricted(wanted)
        neighbours = None if self.neighbours is None else self.neighbours.restricted(wanted)
        return self._with_llms(tuple(wanted), self._llm_vectors[rows], corrections=corrections,
                               neighbours=neighbours, **changes)

    def with_calibration(
        self: RouterT, scale: Sequence[float], bias: Sequence[float], *, kind: str = "per_llm"
    ) -> RouterT:
        """A router whose probabilities are sigmoid(scale[j] * logit + bias[j]) (one entry per LLM, in table
        order; scale > 0; kind "global" only where every LLM has the same pair). Fit them on held-out answers, e.g.
        with python/jeirt_lite_training/calibration.py."""
        calibration = make_calibration(scale, bias, kind, len(self.llms))
        return self._with_llms(self.llms, self._llm_vectors, calibration=calibration)

    def with_neighbours(self: RouterT, neighbours: Optional[NeighbourVotes]) -> RouterT:
        """A router with these neighbour votes (None: without any; `_neighbours`, jeirt_lite_training.neighbour_blend)."""
        if neighbours is not None:
            neighbours = parse_neighbours(neighbours.manifest_block(), neighbours.tensors(), self.llms,
                                          self.manifest.encoder.features_width, "neighbour votes")
        return self._with_llms(self.llms, self._llm_vectors, neighbours=neighbours)

    def without_calibration(self: RouterT) -> RouterT:
        """A router that reports the model's raw probabilities."""
        return self._with_llms(self.llms, self._llm_vectors, calibration=None)

    def with_costs(self: RouterT, costs: Mapping[str, float], *, replace: bool = False) -> RouterT:
        """A router storing these per-LLM costs (finite, >= 0, known names): merged over the stored ones, or with
        `replace=True` instead of them (an LLM left out then has no cost)."""
        merged = {**({} if replace else self.costs), **check_costs(costs, self.llms, "costs")}
        return self._with_llms(self.llms, self._llm_vectors, costs=merged)

    def rename_llms(self: RouterT, names: Mapping[str, str]) -> RouterT:
        """A router whose LLMs `old` are called `names[old]`: everything kept by LLM name (costs, onboarded LLMs'
        corrections and records, neighbour votes' tallies) follows its LLM; the rest is unchanged."""
        for old in names:
            self.llm_index(old)
        renamed = tuple(str(names.get(name, name)) for name in self.llms)
        changes: dict[str, Any] = {}
        if self.manifest.costs is not None:
            changes["costs"] = {str(names.get(name, name)): cost for name, cost in self.costs.items()}
        if self.manifest.onboarded is not None:
            changes["onboarded"] = tuple(_renamed_record(record, names) for record in self.manifest.onboarded)
        training = _renamed_training(self.manifest.training, self.llms, names)
        if training is not None:
            changes["training"] = training
        validate_llm_table(renamed, self._llm_vectors, "renamed LLMs")
        corrections = None if self.corrections is None else self.corrections.renamed(names)
        neighbours = None if self.neighbours is None else self.neighbours.renamed(names)
        return self._with_llms(renamed, self._llm_vectors, corrections=corrections, neighbours=neighbours, **changes)

    def remove_llm(self: RouterT, name: str) -> RouterT:
        """A router without the LLM `name`."""
        index = self.llm_index(name)
        if len(self.llms) == 1:
            raise JeirtError(f"cannot remove {name!r}: it is this router's only LLM")
        return self.select_llms([llm for i, llm in enumerate(self.llms) if i != index])

    def llm_index(self, name: str) -> int:
        """Row of LLM `name` in the table; a clear error for an unknown name."""
        try:
            return self.llms.index(name)
        except ValueError:
            raise JeirtError(f"unknown LLM {name!r}; this router holds {', '.join(self.llms)}") from None

    def _with_llms(
        self: RouterT,
        names: tuple[str, ...],
        table: np.ndarray,
        *,
        corrections: Union[FeatureCorrections, None, str] = "keep",
        neighbours: Union[NeighbourVotes, None, str] = "keep",
        **manifest_changes: Any,
    ) -> RouterT:
        """A router with another LLM table (and manifest fields: calibration, costs, onboarded; corrections
        "keep" keeps this router's), through the constructor; it shares this router's encoders (ONNX Runtime
        sessions may run from several threads)."""
        table = np.ascontiguousarray(table, dtype=np.float32)
        table.setflags(write=False)
        kept = self.corrections if isinstance(corrections, str) else corrections
        votes = self.neighbours if isinstance(neighbours, str) else neighbours
        if manifest_changes.get("costs") is not None:
            manifest_changes["costs"] = MappingProxyType(dict(manifest_changes["costs"]))
        if "training" not in manifest_changes:  # rename_llms passes its own, under the new names
            training = _renamed_training(self.manifest.training, [name for name in self.llms if name in names], {})
            if training is not None:
                manifest_changes["training"] = training
        block = None if kept is None else freeze(kept.manifest_block())
        manifest = replace(self.manifest, llms=tuple(names), corrections=block,
                           neighbours=None if votes is None else freeze(votes.manifest_block()), **manifest_changes)
        artifact = replace(self._artifact, manifest=manifest, llm_vectors=table, corrections=kept, neighbours=votes)
        router = type(self)(artifact, threads=self._threads, encoder=self._encoder)
        router._graph = self._graph
        return router


def _renamed_record(record: Any, names: Mapping[str, str]) -> Any:
    """An onboarded LLM's record (router.json's `onboarded`) under the LLM's new name."""
    name = record.get("name") if isinstance(record, Mapping) else None
    if not isinstance(name, str) or name not in names:
        return record
    return freeze({**thaw(record), "name": str(names[name])})


def _renamed_training(training: Any, kept: Sequence[str], names: Mapping[str, str]) -> Any:
    """The training record with its LLMs without answers on a benchmark (training.unanswered_benchmarks, which
    `score --forecast` and `info` mark) restricted to the LLMs `kept` and under their new names; None when there is
    no such record. An LLM removed leaves the record: else a new LLM added later under its name (add_llm, whose
    answers may cover every benchmark) would be marked with the removed one's gaps."""
    record = training.get("unanswered_benchmarks") if isinstance(training, Mapping) else None
    if not isinstance(record, Mapping):
        return None
    renamed = {str(names.get(name, name)): gaps for name, gaps in thaw(record).items() if name in kept}
    rest = {key: value for key, value in thaw(training).items() if key != "unanswered_benchmarks"}
    return freeze({**rest, **({"unanswered_benchmarks": renamed} if renamed else {})})
