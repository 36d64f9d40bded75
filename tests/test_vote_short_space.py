"""Neighbour votes in a short space (a few principal directions of the centred features): what `fit` chooses it
on, how a router stores it, and that the Rust search maps each query there as the NumPy reference does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite._neighbours import NeighbourVotes, parse_neighbours, short_rows
from jeirt_lite_training.neighbour_blend import SPACE_GRID, choose_neighbour_votes, neighbour_votes
from jeirt_lite_training.types import Responses
from jeirt_lite_training.votes import principal_space, smoothed_llm_accuracy, tune_votes


def _hidden_clusters(seed: int, noise_dims: int = 200) -> tuple[np.ndarray, Responses, np.ndarray,
                                                                 list[tuple[Responses, Responses]]]:
    """Questions whose clusters live in 4 strong directions, under many weaker noise directions that together
    outweigh them: the raw cosine mostly compares noise, the top principal directions compare clusters. Each
    LLM has a strength per cluster, which only the neighbours know, and each question a difficulty the geometry
    knows (its logit, returned per held-out cell)."""
    rng = np.random.default_rng(seed)
    n_clusters, per, n_llms = 30, 12, 5
    cluster = np.repeat(np.arange(n_clusters), per)
    signal = 3.0 * rng.normal(size=(n_clusters, 4))[cluster]
    emb = np.concatenate([signal, 0.5 * rng.normal(size=(len(cluster), noise_dims))], axis=1) + 4.0
    cells, logits, parts = _answers(rng, cluster, 2.0 * rng.normal(size=(n_clusters, n_llms)))
    return emb.astype(np.float32), cells, logits, parts


def _answers(rng: np.random.Generator, cluster: np.ndarray,
             strength: np.ndarray) -> tuple[Responses, np.ndarray, list[tuple[Responses, Responses]]]:
    """Every LLM's answer on every question (its cluster's strength for the LLM plus a difficulty the geometry
    knows), a quarter of the questions held out: the cells, the held-out cells' logits, the (train, held-out) part."""
    q, llm = (a.ravel() for a in np.meshgrid(np.arange(len(cluster)), np.arange(strength.shape[1]), indexing="ij"))
    logit = -rng.normal(size=len(cluster))[q]
    y = (rng.random(q.size) < 1 / (1 + np.exp(-(logit + strength[cluster[q], llm])))).astype(np.float32)
    cells = Responses(q, llm, y)
    in_val = np.isin(cells.question, rng.permutation(len(cluster))[: len(cluster) // 4])
    return cells, logit[in_val], [(cells.subset(~in_val), cells.subset(in_val))]


def test_the_principal_space_is_centred_unit_and_the_same_for_the_same_rows() -> None:
    emb = _hidden_clusters(0)[0]
    centre, projection = principal_space(emb, 6)
    assert centre.shape == (emb.shape[1],) and projection.shape == (emb.shape[1], 6)
    np.testing.assert_allclose(projection.T @ projection, np.eye(6), atol=1e-5)  # orthonormal directions
    rows = short_rows(emb, centre, projection)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    # The centre is the mean unit row, so the rows spread around the origin of the short space.
    assert np.abs(rows.mean(axis=0)).max() < 0.2
    again = principal_space(emb.copy(), 6)
    np.testing.assert_array_equal(again[1], projection)


def test_the_principal_space_is_the_top_singular_directions_of_the_centred_unit_rows() -> None:
    emb = _hidden_clusters(2, noise_dims=20)[0]
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    centre, projection = principal_space(emb, 5)
    np.testing.assert_allclose(centre, unit.mean(axis=0), atol=1e-6)
    _, _, right = np.linalg.svd(unit - unit.mean(axis=0), full_matrices=False)
    top = right[:5].T
    signs = np.sign(top[np.abs(top).argmax(axis=0), np.arange(5)])  # the largest component made positive
    np.testing.assert_allclose(projection, top * signs, atol=1e-4)


def test_an_llms_prior_is_its_training_accuracy_smoothed_toward_the_global_rate() -> None:
    # LLM 0: 3 of 4 right; LLM 1: 1 of 1; LLM 2: 0 of 1; LLM 3: no cells. Global rate 4/6.
    train = Responses(np.array([0, 1, 2, 3, 0, 1]), np.array([0, 0, 0, 0, 1, 2]),
                      np.array([1, 1, 0, 1, 1, 0], np.float32))
    rate = 4 / 6
    np.testing.assert_allclose(smoothed_llm_accuracy(train, 4, 2.0),
                               [(3 + 2 * rate) / 6, (1 + 2 * rate) / 3, (0 + 2 * rate) / 3, rate])
    # No smoothing: the raw accuracies, kept off 0 and 1 so that a log-loss stays finite; an LLM without cells
    # gets the global rate.
    np.testing.assert_allclose(smoothed_llm_accuracy(train, 4, 0.0), [0.75, 1 - 1e-4, 1e-4, rate])
    empty = Responses(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    np.testing.assert_allclose(smoothed_llm_accuracy(empty, 2, 1.0), [0.5, 0.5])  # nothing known: even odds


def test_tuning_prefers_the_short_space_when_the_features_hide_the_clusters() -> None:
    emb, cells, _, parts = _hidden_clusters(1)
    full = tune_votes([emb], parts, 5)
    short = tune_votes([emb], parts, 5, spaces=(4, None))
    assert full.dims is None and short.dims == 4
    assert short.loss < full.loss - 0.02
    # A width at or above the features' is the features themselves.
    assert tune_votes([emb[:, :8]], parts, 5, spaces=(16,)).dims is None
    assert tune_votes([emb[:, :8]], parts, 5, spaces=(8,)).dims is None


def test_fit_stores_the_chosen_short_space_and_the_rust_search_maps_queries_into_it() -> None:
    emb, cells, logits, parts = _hidden_clusters(2)
    choice = choose_neighbour_votes(emb, parts, 5, parts[0][1], logits)
    assert choice.kept and choice.space_dims in SPACE_GRID
    assert choice.record()["space_dims"] == choice.space_dims
    other = choice.record()["passed_over"]  # the features' votes: what the fast search was chosen over
    assert other["space_dims"] is None
    assert not other["kept"] or other["crossfit_with_votes"] >= choice.crossfit["with_votes"]
    table = neighbour_votes(emb, cells, list("abcde"), choice)
    assert table.short_space and table.keys.shape == (len(emb), choice.space_dims)
    assert table.feature_dim == emb.shape[1]
    queries = emb[::7] + 0.1
    fast, reference = table.sums(queries), table.reference_sums(queries)
    np.testing.assert_allclose(fast[0], reference[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fast[1], reference[1], rtol=1e-4, atol=1e-4)
    with pytest.raises(JeirtError, match="features"):
        table.offsets(queries[:, :10], list("abcde"), len(queries))


def test_fit_keeps_the_features_when_no_short_space_holds_the_neighbours() -> None:
    # 120 clusters of 3 questions span 119 directions of equal weight: 16 or 32 of them lose most of who is near
    # whom, so the features' votes have the lower held-out loss and fit stores full-width keys.
    rng = np.random.default_rng(3)
    n_clusters, per, n_llms = 120, 3, 4
    cluster = np.repeat(np.arange(n_clusters), per)
    emb = (rng.normal(size=(n_clusters, 160))[cluster] + 0.1 * rng.normal(size=(len(cluster), 160))).astype(np.float32)
    cells, logits, parts = _answers(rng, cluster, 2.5 * rng.normal(size=(n_clusters, n_llms)))
    choice = choose_neighbour_votes(emb, parts, n_llms, parts[0][1], logits)
    assert choice.kept and choice.space_dims is None
    other = choice.record()["passed_over"]  # the short space's votes, kept or not, and their cross-fitted loss
    assert other["space_dims"] in SPACE_GRID
    assert not other["kept"] or other["crossfit_with_votes"] > choice.crossfit["with_votes"]
    table = neighbour_votes(emb, cells, list("abcd"), choice)
    assert not table.short_space and table.keys.shape == emb.shape


@pytest.fixture(scope="module")
def router() -> Router:
    return Router.load(threads=1).with_neighbours(None)  # the shipped static router: its graph gives features


TEXTS = [f"{stem} (item {i})" for i in range(8) for stem in
         ("What is 7 * 8?", "Who wrote Hamlet?", "Which court hears a contract dispute?",
          "Which enzyme unwinds DNA during replication?", "What is the capital of France?")]


def _short_votes(router: Router, texts: list[str], dims: int = 4) -> NeighbourVotes:
    _, features = router.encode(texts, features=True)
    assert features is not None
    centre, projection = principal_space(features, dims)
    answers = np.random.default_rng(0).integers(0, 2, size=(len(texts), len(router.llms))).astype(np.int8)
    return NeighbourVotes(router.llms, short_rows(features, centre, projection).astype(np.float16), answers,
                          np.full(len(router.llms), 0.6, np.float32), 3, 1.0, 0.1, 0.7, centre, projection)


def test_a_router_voting_in_a_short_space_saves_loads_and_scores_as_before(router: Router, tmp_path: Path) -> None:
    votes = _short_votes(router, TEXTS)
    voting = router.with_neighbours(votes)
    asked = ["What is 9 * 6?", "Who wrote Macbeth?", "Which organelle makes ATP?"]
    _, features = router.encode(asked, features=True)
    fast, reference = votes.sums(features), votes.reference_sums(features)
    np.testing.assert_allclose(fast[0], reference[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fast[1], reference[1], rtol=1e-4, atol=1e-5)
    loaded = Router.load(voting.save(tmp_path / "short"), threads=1)
    assert loaded.neighbours is not None and loaded.neighbours.short_space
    np.testing.assert_array_equal(loaded.neighbours.projection, votes.projection)
    np.testing.assert_array_equal(loaded.predict_proba(asked), voting.predict_proba(asked))
    assert not np.allclose(loaded.predict_proba(asked), router.predict_proba(asked))


def _block_and_tensors(votes: NeighbourVotes) -> tuple[dict[str, object], dict[str, np.ndarray]]:
    return votes.manifest_block(), {k: np.array(v) for k, v in votes.tensors().items()}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.pop("centre"), "projection without its partner"),
        (lambda t: t.pop("projection"), "centre without its partner"),
        (lambda t: t.update(projection=t["projection"][:, :2]), "must be \\(p,\\) and \\(p, 3\\)"),
        (lambda t: t.update(centre=t["centre"][:-1]), "must be \\(p,\\) and \\(p, 3\\)"),
        (lambda t: t["projection"].__setitem__((0, 0), np.nan), "must be finite"),
        (lambda t: t.update(centre=t["centre"].astype(np.float64)), "must be float32"),
        (lambda t: t.update(projection=t["projection"].astype(np.float64)), "must be float32"),
        (lambda t: t.update(centre=t["centre"][:, None]), "must be \\(p,\\) and \\(p, 3\\)"),
    ],
)
def test_a_bad_short_space_is_refused_by_name(change, message: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    centre, projection = rng.normal(size=6).astype(np.float32), rng.normal(size=(6, 3)).astype(np.float32)
    votes = NeighbourVotes(("a", "b"), np.ones((4, 3), np.float16), np.zeros((4, 2), np.int8),
                           np.full(2, 0.5, np.float32), 2, 1.0, None, 0.5, centre, projection)
    assert parse_neighbours(*_block_and_tensors(votes), ["a", "b"], 6, "n.safetensors").short_space
    block, tensors = _block_and_tensors(votes)
    change(tensors)
    with pytest.raises(JeirtError, match=message):
        parse_neighbours(block, tensors, ["a", "b"], 6, "n.safetensors")
    with pytest.raises(JeirtError, match="features of size 6, the encoder gives 3"):
        parse_neighbours(*_block_and_tensors(votes), ["a", "b"], 3, "n.safetensors")


@pytest.mark.parametrize(
    ("short", "full", "error", "chosen"),
    [
        ((True, 0.50), (True, 0.49), 0.005, "full"),  # both kept: the features lower by more than the noise
        ((True, 0.50), (True, 0.49), 0.02, "short"),  # lower, but within one standard error: the cheaper search
        ((True, 0.49), (True, 0.50), 0.005, "short"),
        ((True, 0.50), (True, 0.50), 0.0, "short"),  # a tie goes to the cheaper search
        ((False, 0.48), (True, 0.50), 0.005, "full"),  # a short space the keep rule drops does not shut out the features
        ((True, 0.50), (False, 0.48), 0.005, "short"),
        ((False, 0.50), (False, 0.49), 0.005, "short"),  # both dropped: the short one records why
    ],
)
def test_the_features_win_only_when_kept_and_clearly_lower(
    monkeypatch: pytest.MonkeyPatch, short: tuple[bool, float], full: tuple[bool, float], error: float, chosen: str
) -> None:
    import jeirt_lite_training.neighbour_blend as blend

    def fake_tune(embeddings, parts, n_llms, k_grid, alpha_grid, tau_grid, spaces):  # type: ignore[no-untyped-def]
        return "full" if spaces == (None,) else "short"

    def fake_weigh(tuning, heldout, logits):  # type: ignore[no-untyped-def]
        kept, loss = full if tuning == "full" else short
        return blend.VoteChoice(10, 1.0, None, 0.5, kept, np.zeros(1), {"with_votes": loss, "calibration_only": 0.6},
                                None if tuning == "full" else 16)

    monkeypatch.setattr(blend, "tune_votes", fake_tune)
    monkeypatch.setattr(blend, "_weighed", fake_weigh)
    monkeypatch.setattr(blend, "space_difference", lambda s, f, *_: (f.crossfit["with_votes"] - s.crossfit["with_votes"],
                                                                     error))
    choice = blend.choose_neighbour_votes(np.zeros((4, 3), np.float32), [], 2, None, np.zeros(1))  # type: ignore[arg-type]
    assert choice.space_dims == (None if chosen == "full" else 16)


def test_the_space_difference_is_the_cross_fitted_loss_difference_with_its_error_over_questions() -> None:
    from jeirt_lite_training.neighbour_blend import VoteChoice, crossfit_losses, space_difference

    rng = np.random.default_rng(0)
    question = np.repeat(np.arange(60), 5)
    logits = rng.normal(size=len(question))
    correct = (rng.random(len(question)) < 1 / (1 + np.exp(-logits))).astype(np.float32)
    heldout = Responses(question, np.tile(np.arange(5), 60), correct)
    informative = logits + rng.normal(scale=0.5, size=len(question))  # a vote that knows something
    noise = rng.normal(size=len(question))

    def choice(votes: np.ndarray) -> VoteChoice:
        return VoteChoice(10, 1.0, None, 0.5, True, votes, crossfit_losses(logits, votes, heldout))

    short, full = choice(noise), choice(informative)
    difference, error = space_difference(short, full, heldout, logits)
    assert difference == pytest.approx(full.crossfit["with_votes"] - short.crossfit["with_votes"], abs=1e-9)
    assert difference < 0 < error
    assert space_difference(short, short, heldout, logits) == (0.0, 0.0)
