"""The Router: question texts in, which LLM will answer correctly out."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable, Optional, Union

import numpy as np

from . import kernels
from ._alignment import AlignmentResult, align
from ._encoder import OnnxEncoder, check_texts
from ._errors import JeirtError
from ._group_forecast import GroupSums, checked_groups
from ._llm_params import check_costs, cost_vector
from ._manifest import thaw
from ._onboard_router import AnsweredQuestions, with_new_llm
from ._onboarding import DEFAULT_L2
from ._questions import EncodedQuestions, Questions, VotedQuestions, distinct_texts
from ._results import RouteResult
from ._router_tables import RouterTables
from ._routing import route_rows, routing_rows
from ._static_path import StaticEncoder
from ._training_questions import normalise_question
from ._update_llm import with_updated_llm
from .artifact import load_artifact, save_artifact

PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_ROUTER_PATH = Path(__file__).parent / "default_router"


class Router(RouterTables):
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

    @classmethod
    def load(
        cls, path: Optional[PathLike] = None, *, threads: Optional[int] = None, fast_path: bool = True
    ) -> Router:
        """Load a router folder (`None`: the default router that ships inside the package).

        Args:
            path: a folder written by `Router.save` or by training.
            threads: cores for encoding and scoring, 1..MAX_THREADS (jeirt_lite._limits); None uses every core
                this process may run on.
            fast_path: static routers encode in Rust (same vectors as their ONNX graph, several times faster);
                False forces the ONNX Runtime path, the reference.

        Raises:
            JeirtError: the folder is missing, incomplete, corrupt or inconsistent; the message names the file.
        """
        return cls(
            load_artifact(DEFAULT_ROUTER_PATH if path is None else Path(path)), threads=threads, fast_path=fast_path
        )

    def __repr__(self) -> str:
        label = self.manifest.label
        note = f", label={label!r}" if label else ""
        return f"Router(path={str(self.path)!r}, llms={len(self.llms)}, dim={self.dim}{note})"

    # -- questions: texts encoded once, then scored by any method ---------------------------------------------

    def encode(
        self, texts: Sequence[str], *, batch_size: Optional[int] = None, features: Optional[bool] = None
    ) -> EncodedQuestions:
        """The questions as this router reads them: vectors (N, d) float32 in input order and, where asked, the
        encoder's features (N, p). Every scoring method takes the result in place of texts.

        `batch_size`: texts per encoder call; None uses the router's measured choice (manifest encoder.batch_size,
        else DEFAULT_BATCH_SIZE). `features`: None computes them when this router's scoring reads them
        (`needs_features`: onboarded LLMs' corrections, neighbour votes); True whenever the encoder gives them
        (`add_llm` fits a correction on them); False never. Texts longer than `manifest.encoder.max_chars`
        characters (MAX_CHARS_PER_TOKEN x max_seq_length) count only up to there.
        """
        return self._encode_listed(check_texts(texts), batch_size, features)

    def _encode_listed(
        self, texts: list[str], batch_size: Optional[int], features: Optional[bool]
    ) -> EncodedQuestions:
        """`encode` of texts `check_texts` has passed."""
        # Cut before tokenising: the encoder reads at most max_seq_length tokens, and tokenising a 10 MB text in
        # full costs seconds and gigabytes for nothing (the cut, `manifest.encoder.max_chars`, is in _limits).
        limit = self.manifest.encoder.max_chars
        once, rows = distinct_texts([text[:limit] for text in texts])  # a text given more than once is encoded once
        encoded = self._encode_checked(once, batch_size, features)
        return encoded if rows is None else encoded.rows(rows)

    def _encode_checked(
        self, checked: list[str], batch_size: Optional[int], features: Optional[bool]
    ) -> EncodedQuestions:
        if not (self.needs_features if features is None else features):
            return EncodedQuestions(self._encoder.encode(checked, batch_size=batch_size))
        encoder: Union[OnnxEncoder, StaticEncoder] = self._encoder
        # The Rust fast path gives the graph's features too (its pooled rows) unless their widths disagree.
        if isinstance(encoder, StaticEncoder) and self.manifest.encoder.feature_output and not encoder.gives_features:
            if self._graph is None:
                art = self._artifact
                self._graph = OnnxEncoder(art.tokenizer_path, art.encoder_path, art.encoder, art.dim, self._threads)
            encoder = self._graph
        return EncodedQuestions(*encoder.encode_with_features(checked, batch_size=batch_size))

    def _encoded(self, questions: Questions) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """(checked question vectors, features) of texts (encoded here) or of questions encoded before."""
        if not isinstance(questions, EncodedQuestions):
            questions = self.encode(questions)
        return self._check_vectors(questions.vectors), questions.features

    def _vectors_of(self, questions: Questions) -> np.ndarray:
        """Checked question vectors of texts (encoded here, without features) or of questions encoded before; for
        the methods that read the vectors only (difficulty, alignment)."""
        if not isinstance(questions, EncodedQuestions):
            questions = self.encode(questions, features=False)
        return self._check_vectors(questions.vectors)

    def _offsets(
        self, vectors: np.ndarray, features: Optional[np.ndarray], names: Optional[Sequence[str]] = None,
        questions: Optional[Questions] = None,
    ) -> Optional[np.ndarray]:
        """The logit offsets of the corrections and the votes; the votes' sums come with `questions` where
        `score`'s background jobs computed them (VotedQuestions)."""
        names = self.llms if names is None else names
        rows = vectors.shape[0]
        parts = [] if self.corrections is None else [self.corrections.offsets(features, names, rows)]
        if self.neighbours is not None and isinstance(questions, VotedQuestions):
            parts.append(self.neighbours.offsets_from_sums(questions.vote_sums, names, rows))
        elif self.neighbours is not None:
            parts.append(self.neighbours.offsets(features, names, rows, self._threads))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]

    def _on_every_llm(self, kernel: Callable[..., np.ndarray], questions: Questions) -> np.ndarray:
        """`kernel` (kernels.probabilities or mean_probability) on the questions and the whole LLM table, with the
        router's calibration and logit offsets."""
        vectors, features = self._encoded(questions)
        cal = self._calibration
        return kernel(
            vectors,
            self._llm_vectors,
            threads=self._threads,
            scale=None if cal is None else cal.scale,
            bias=None if cal is None else cal.bias,
            offsets=self._offsets(vectors, features, questions=questions),
        )

    def predict_proba(self, questions: Questions) -> np.ndarray:
        """P(correct) (N, K) float32 for every question (texts, or `encode`'s result) and every LLM."""
        return self._on_every_llm(kernels.probabilities, questions)

    def route(
        self,
        questions: Questions,
        k: int = 1,
        *,
        costs: Optional[Mapping[str, float]] = None,
        cost_weight: float = 0.0,
        min_probability: Optional[float] = None,
        llms: Optional[Sequence[str]] = None,
    ) -> RouteResult:
        """The k LLMs to send each question to, best first.

        By default the most likely to answer correctly (ties: lower table index). With costs:

        * ``cost_weight=λ > 0``: maximise P(correct) − λ·cost (λ in probability per unit of cost);
        * ``min_probability=t``: the cheapest LLM with P(correct) ≥ t; where none clears t, the most likely
          LLM, with ``result.fallback[i]`` True.

        Args:
            questions: question texts, or `encode`'s result (`EncodedQuestions`).
            k: how many LLMs per question.
            costs: {name: cost} overriding the router's stored costs (``router.costs``) for this call. Cost-aware
                routing (``cost_weight`` or ``min_probability``) without ``llms`` routes among the LLMs that have
                a cost (``router.priced_llms``): an LLM whose cost is unknown is left out, not given one.
            cost_weight: λ, the price of one unit of cost in probability of a correct answer.
            min_probability: the threshold t of the cheapest-above-threshold rule.
            llms: route only among these LLMs (e.g. those a service has); indices still refer to the full table.
        """
        cost_table = check_costs(costs, self.llms, "costs") if costs is not None else self.costs
        rows = routing_rows(self.llms, k, cost_weight, min_probability, llms, cost_table)
        vectors, features = self._encoded(questions)
        needs_costs = cost_weight != 0 or min_probability is not None
        names = [self.llms[r] for r in rows]
        cost_array = cost_vector(cost_table, names, "cost-aware routing") if needs_costs else None
        calibration = None if self._calibration is None else self._calibration.select(rows)
        indices, probabilities, fallback = route_rows(
            vectors,
            np.ascontiguousarray(self._llm_vectors[rows]),
            k,
            calibration=calibration,
            costs=cost_array,
            cost_weight=cost_weight,
            min_probability=min_probability,
            threads=self._threads,
            offsets=self._offsets(vectors, features, names, questions),
        )
        if rows != list(range(len(self.llms))):  # a subset, or the LLMs in another order: rows of the full table
            indices = np.asarray(rows, dtype=np.uint32)[indices]
        return RouteResult(
            indices=indices, probabilities=probabilities, llm_names=self.llms, fallback=fallback
        )

    def difficulty(self, questions: Questions) -> np.ndarray:
        """Difficulty of each question: the norm of its question vector (N,) float32; larger is harder."""
        vectors = self._vectors_of(questions)
        # Summed in float64 row by row (a float32 square overflows at 1.8e19; no full-size copy is made): a norm is
        # NaN or inf exactly where its row holds one.
        norms: np.ndarray = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64))
        bad = np.flatnonzero(~np.isfinite(norms))
        if bad.size:
            raise JeirtError(f"question row {int(bad[0])} contains NaN or inf")
        bad = np.flatnonzero(norms > np.finfo(np.float32).max)
        if bad.size:
            raise JeirtError(f"question row {int(bad[0])} has a norm that overflows float32")
        return norms.astype(np.float32)

    def forecast(self, questions: Questions) -> dict[str, float]:
        """Expected accuracy of each LLM on a question bank: the mean P(correct) over the questions."""
        means = self._on_every_llm(kernels.mean_probability, questions)
        return {name: float(p) for name, p in zip(self.llms, means.tolist())}

    def forecast_by(self, questions: Questions, groups: Sequence[str]) -> dict[str, dict[str, float]]:
        """Expected accuracy of each LLM on each group of the questions: {group: {llm: mean P(correct)}}.

        `groups[i]` names question i's group (its subject, its benchmark); groups come in their text's order.

        >>> router.forecast_by(["What is 2 + 2?", "Who wrote Hamlet?"], ["math", "literature"])  # doctest: +SKIP
        {'literature': {'llm-a': 0.81, ...}, 'math': {'llm-a': 0.64, ...}}

        Raises:
            JeirtError: no questions (as `forecast` refuses them), or groups that are not one per question.
        """
        if isinstance(questions, EncodedQuestions):
            probabilities = self.predict_proba(questions)
            checked = checked_groups(groups, len(probabilities))
        else:  # texts are counted before their encoding, the costly part (checked and listed once: an iterator too)
            texts = check_texts(questions)
            checked = checked_groups(groups, len(texts))
            probabilities = self.predict_proba(self._encode_listed(texts, None, None))
        sums = GroupSums(self.llms, "groups", max_groups=None)  # in memory: as many groups as the caller has
        sums.add(checked, probabilities)
        return sums.result().groups

    # -- alignment with the training questions (routers that carry reference directions) ------------------------

    @property
    def has_alignment(self) -> bool:
        """Whether this router carries reference directions (routers trained before the feature do not)."""
        return self._artifact.reference_directions is not None

    def alignment(self, questions: Questions) -> AlignmentResult:
        """How much each question looks like the training questions, and whether it counts as in distribution.

        Returns `AlignmentResult(scores, in_distribution, threshold)`: the mean cosine of each question's
        direction (around the mean training question) to its nearest training-question directions, and
        `scores >= threshold` where the threshold is a low percentile of validation questions' scores (see
        `router.manifest["alignment"]`).

        Raises:
            JeirtError: the router has no reference directions.
        """
        reference = self._artifact.reference_directions
        spec = self.manifest.alignment
        if reference is None or spec is None:
            raise JeirtError(
                f"{self.path}: this router has no reference directions (reference.safetensors), so alignment and "
                "the in-distribution flag are unavailable; routers exported by current training carry them"
            )
        return align(self._vectors_of(questions), reference, spec.threshold, spec.top_k, center=self._artifact.reference_center)

    # -- changing the set of LLMs (the question side stays frozen) --------------------------------------------------

    def add_llm(
        self,
        name: str,
        questions: Questions,
        correct: Sequence[Union[int, bool]],
        *,
        l2: float = DEFAULT_L2,
        cost: Optional[float] = None,
        learned: Optional[Union[Sequence[bool], np.ndarray]] = None,
    ) -> Router:
        """A router that also holds a new LLM, fitted from its answers to some questions.

        The new LLM's vector is fitted exactly (a convex logistic regression with a Gaussian prior centred on the
        mean existing LLM); where the router's encoder exposes its features, a correction on them is added for
        this LLM, weighted over ridge strengths and router-logit scales by each fit's cross-validated likelihood of
        the answers, so that it matters where the answers say the router's space misses something (questions
        unlike the router's; `jeirt_lite._corrections`). The encoder and the other LLMs are unchanged. A few
        seconds at most.

        How well it fits (cross-validated AUC and log-loss on the answers, the fits averaged with their weights,
        and how many of the questions look out of distribution for the router) is in
        `manifest["onboarded"][-1]`.

        Args:
            name: the new LLM's name (must not be in the router yet).
            questions: questions the LLM answered: texts, or `encode(texts, features=True)`'s result (without
                features, no correction is fitted).
            correct: 1/True where it answered correctly, 0/False where not; one per question. A question may come
                more than once (the LLM sampled several times): each answer counts, and the cross-validation holds
                out all of a question's answers together (texts equal up to whitespace are one question).
            l2: prior strength (see `jeirt_lite._onboarding.fit_llm_vector`).
            cost: the new LLM's cost, stored with the others (see `route`); None leaves it unknown.
            learned: which of the questions the router learned from; from texts it is read off the router's
                record (`learned_from`); for encoded questions None means unknown.
        """
        answered = self._answered(questions, learned)
        return with_new_llm(self, name, answered.vectors, correct, l2=l2, cost=cost, **answered.details())

    def update_llm(
        self,
        name: str,
        questions: Questions,
        correct: Sequence[Union[int, bool]],
        *,
        learned: Optional[Union[Sequence[bool], np.ndarray]] = None,
    ) -> Router:
        """A router whose LLM `name` (one it holds) is adapted to its answers on the user's questions.

        The LLM keeps its vector, neighbour votes and calibration; on top of its logit z a correction on the
        encoder's features is fitted, logit = s·z + f·w + b, weighted over add_llm's grid by cross-validated
        likelihood with "no change" in the grid (`jeirt_lite._update_llm`), and stored as its calibration and feature
        correction. Where the router's P(correct) levels are off on questions unlike its own, a few hundred answers
        set them right (docs/research/onboarding.md). The fit is in `manifest["onboarded"][-1]` ("update": true).

        Args:
            name: an LLM of this router.
            questions, correct, learned: as `add_llm` takes them; encoded questions need their features.
        """
        answered = self._answered(questions, learned)
        return with_updated_llm(self, name, answered.vectors, correct, self._offsets, **answered.details())

    def _answered(
        self, questions: Questions, learned: Optional[Union[Sequence[bool], np.ndarray]]
    ) -> AnsweredQuestions:
        """An LLM's answered questions as add_llm and update_llm fit on them."""
        groups = None  # encoded questions: equal vectors are one question's answers
        if not isinstance(questions, EncodedQuestions):
            texts = check_texts(questions)  # read once: a generator of texts is spent by its first reading
            learned = self.learned_from(texts) if learned is None else learned
            groups = np.asarray([normalise_question(text) for text in texts], dtype=object)
            questions = self.encode(texts, features=True)
        vectors = self._check_vectors(questions.vectors)
        alignment = self.alignment(EncodedQuestions(vectors)) if self.has_alignment else None
        mask = None if learned is None else np.asarray(learned)
        return AnsweredQuestions(vectors, questions.features, mask, alignment, groups)

    def learned_from(self, texts: Sequence[str]) -> Optional[np.ndarray]:
        """(N,) bool: which of `texts` this router was trained on (texts equal up to whitespace count as the same
        question), or None when the router keeps no record of its training questions (training_questions.npy).
        `add_llm` fits a new LLM's feature correction only on answers to the other questions."""
        record = self._artifact.training_questions
        if record is None:
            return None
        from ._training_questions import seen_mask

        return seen_mask(record, check_texts(texts))

    # -- persistence -------------------------------------------------------------------------------------------

    def save(
        self,
        path: PathLike,
        *,
        overwrite: bool = False,
        static_encoder: Optional[PathLike] = None,
        encoder_onnx: Optional[PathLike] = None,
    ) -> Path:
        """Write this router as a folder, atomically (a temporary folder renamed into place).

        `static_encoder`: a static_encoder.safetensors to store with it (jeirt_lite_training.add_static_encoder); default:
        the router's own, if it has one. `encoder_onnx`: a graph computing the same vectors to store instead of
        the router's own (jeirt_lite_training.add_static_encoder: one that reads its tensors from `static_encoder`). A graph
        whose external data does not match the static file exactly is refused (jeirt_lite._onnx_external).
        """
        manifest = self.manifest
        content = manifest.to_json()
        extra: dict[str, Any] = {key: content[key] for key in ("calibration", "costs", "onboarded") if key in content}
        extra.update(thaw(manifest.extra))
        alignment = None
        if manifest.alignment is not None:
            alignment = {key: value for key, value in manifest.alignment.to_json().items() if key != "n_reference"}
        return save_artifact(
            path,
            llm_names=self.llms,
            llm_vectors=self._llm_vectors,
            tokenizer_json=self._artifact.tokenizer_path,
            encoder_onnx=encoder_onnx if encoder_onnx is not None else self._artifact.encoder_path,
            encoder=manifest.encoder,
            training=content["training"],
            metrics=content["metrics"],
            label=manifest.label,
            extra=extra,
            overwrite=overwrite,
            reference_directions=self._artifact.reference_directions,
            alignment=alignment,
            reference_center=self._artifact.reference_center,
            static_encoder=static_encoder if static_encoder is not None else self._artifact.static_encoder_path,
            corrections=self.corrections,
            training_questions=self._artifact.training_questions,
            neighbours=self.neighbours,
        )
