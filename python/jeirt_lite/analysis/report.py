"""One self-contained HTML page about a router on a data folder: every figure an inlined PNG, its numbers beside it.

    jeirt-lite report --router ROUTER --data data/mmlu_pro -o report.html

The questions are embedded with the router; observed error rates and the calibration curve come from the data's
responses. Unless question ids are given (e.g. the router's test split), the data may include the questions the
router was trained on, which flatters every number that compares predictions with answers.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .._alignment import unit_rows
from .._errors import JeirtError, option_error
from .._io.outputs import atomic_output, refuse_inputs
from .._metrics import ECE_BINS, accuracy, reliability_table
from .._questions import EncodedQuestions
from ._difficulty import difficulty_vs_error
from ._onboarding_value import MIN_ANSWERS, REPEATS, onboarding_curves
from ._probes import needs_calculation, probe_vectors
from ._router_split import MIN_QUESTIONS, report_questions
from ._routing_value import RoutingValue, answer_matrix, cost_frontier, routing_value
from ._stats import pca, roc_auc
from ._taxonomy import taxonomy
from .data import DATA_FILES, ResponseData, stratified_sample

if TYPE_CHECKING:
    from .._router import Router

SECTIONS = (
    "Router and data",
    "Difficulty",
    "Taxonomy",
    "LLM vectors",
    "Calibration",
    "Arithmetic probe",
    "Onboarding",
    "Quality and cost",
    "Alignment",
)


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError('the report needs matplotlib: pip install "jeirt-lite[report]"') from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def require_matplotlib() -> None:
    """Raises ImportError naming the `report` extra when matplotlib is missing (the CLI checks this first)."""
    _pyplot()


@dataclass
class Section:
    title: str
    figures: list[str] = field(default_factory=list)  # base64 PNGs
    rows: list[tuple[str, str]] = field(default_factory=list)  # numbers beside the figure
    notes: list[str] = field(default_factory=list)
    table: Optional[tuple[list[str], list[list[str]]]] = None


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    _pyplot().close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _f(value: float, digits: int = 3) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _subject_colours(subjects: np.ndarray) -> tuple[list[str], np.ndarray]:
    names, codes = np.unique(subjects.astype(str), return_inverse=True)
    return [str(n) for n in names], codes


def build_report(
    router: Router,
    data_dir: Path,
    output: Path,
    *,
    question_ids: Optional[Sequence[str]] = None,
    max_questions: Optional[int] = 3000,
    seed: int = 0,
    columns: Optional[Mapping[str, str]] = None,
) -> Path:
    """Write the HTML report and return its path.

    Args:
        router: the router to describe.
        data_dir: a data folder (questions.csv, models.csv, responses.csv), or a long or wide table of answers,
            read as `train` reads it (needs the train extra).
        output: the .html file to write (a path's byte that is not UTF-8 shown escaped on it, `\\udcff`).
        question_ids: only these questions; None: the router's test split where it can be drawn again
            (_router_split), else all of the folder's.
        max_questions: embed a subject-stratified seeded sample of at most this many questions (None: all).
        columns: a table's column names, as `train` takes them (the fields of jeirt_lite_training.data.Columns:
            question, text, llm, correct); None: the names train looks for.
    """
    output = Path(output)
    if output.is_dir():
        raise JeirtError(f"{output}: is a folder; give a file name such as {output / 'report.html'}")
    if not output.parent.is_dir():  # checked before the work, and never created in passing
        raise JeirtError(f"{output}: folder {output.parent} does not exist")
    data_dir = Path(data_dir)
    folder = data_dir.is_dir()
    if not folder and not data_dir.is_file():
        raise JeirtError(f"{data_dir}: no such data folder or table")
    if folder and columns:
        raise option_error(f"{data_dir}: a data folder's files have fixed column names; the column options name the "
                           "columns of one table")
    inputs = [data_dir / name for name in DATA_FILES] if folder else [data_dir]
    refuse_inputs(output, [*inputs, router.path], folders=[router.path])
    plt = _pyplot()
    data, held_out, how = report_questions(router, data_dir, folder, columns, question_ids)
    if data.n_questions < MIN_QUESTIONS:
        raise JeirtError(f"{data_dir}: the report needs at least {MIN_QUESTIONS} questions, found {data.n_questions}")
    if max_questions is not None and data.n_questions > max_questions:
        data = data.subset(stratified_sample(data.subjects, max_questions, seed))
    vectors, features = router.encode(data.texts)  # features only where scoring reads them (votes)
    probabilities = router.predict_proba(EncodedQuestions(vectors, features))  # what the router says, votes included
    sections = [
        _summary(router, data, data_dir, held_out, how),
        _difficulty(plt, router, vectors, data),
        *_taxonomy_and_llms(plt, router, vectors, data, seed),
        _calibration(plt, router, probabilities, data),
        _probe(plt, vectors, data, seed),
        _onboarding(plt, router, EncodedQuestions(vectors, features), data, seed),
        _quality_and_cost(plt, router, probabilities, data),
        _alignment(plt, router, vectors),
    ]
    with atomic_output(output) as temporary:
        temporary.write_text(_html(router, sections), encoding="utf-8", errors="backslashreplace")
    return output


def _summary(router: Router, data: ResponseData, data_dir: Path, held_out: bool, how: str) -> Section:
    section = Section("Router and data")
    shared = sorted(set(router.llms) & set(data.llm_names))
    section.rows = [
        ("router", str(router.path)), ("d", str(router.dim)), ("LLMs in router", str(len(router.llms))),
        ("data", str(data_dir)), ("questions used", str(data.n_questions)), ("observed cells", str(data.correct.size)),
        ("LLMs in both", str(len(shared))),
    ]
    if held_out:
        section.notes.append(f"Questions: {how}.")
    else:
        section.notes.append(f"No question ids were given and {how}: these questions may include the router's "
                             "training questions, which flatters every section that compares with answers.")
    label = router.manifest.get("label")
    if label:
        section.notes.append(f"Router label: {label}")
    return section


def _difficulty(plt: Any, router: Router, vectors: np.ndarray, data: ResponseData) -> Section:
    norms = router.difficulty(EncodedQuestions(vectors))
    errors = data.error_rates()
    ok = np.isfinite(errors)
    if not ok.any():  # the norms still say something; the correlation has nothing to read
        section = Section("Difficulty", rows=[("questions", "0"), ("Spearman (norm, error rate)", "n/a")])
        section.notes.append("No question here has an answer: no correlation of difficulty with error.")
        return section
    result = difficulty_vs_error(norms, errors, list(data.subjects))
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.scatter(norms[ok], errors[ok], s=4, alpha=0.3)
    if ok.sum() >= 10:
        edges = np.quantile(norms[ok], np.linspace(0, 1, 11))
        bins = np.clip(np.searchsorted(edges, norms[ok], side="right") - 1, 0, 9)
        means = [(norms[ok][bins == b].mean(), errors[ok][bins == b].mean()) for b in range(10) if (bins == b).any()]
        ax.plot(*zip(*means), "r-o", ms=4, label="decile means")
        ax.legend()
    ax.set_xlabel("question norm ‖q‖ (difficulty)")
    ax.set_ylabel("observed error rate")
    section = Section("Difficulty", [_png(fig)])
    section.rows = [("questions", str(result.n_questions)), ("Spearman (norm, error rate)", _f(result.spearman))]
    section.table = (["subject", "questions", "Spearman"],
                     [[s, str(n), _f(r)] for s, (n, r) in result.per_subject.items()])
    return section


def _taxonomy_and_llms(plt: Any, router: Router, vectors: np.ndarray, data: ResponseData,
                       seed: int) -> list[Section]:
    k_values = [k for k in range(4, 21, 2) if k < data.n_questions // 2] or [2]
    tax = taxonomy(vectors, list(data.subjects), k_values=k_values, seed=seed)
    directions = unit_rows(vectors)
    points, components, mean, ratio = pca(directions, 2)
    names, codes = _subject_colours(data.subjects)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    cmap = plt.get_cmap("tab20")
    for i, name in enumerate(names):
        rows = codes == i
        axes[0].scatter(points[rows, 0], points[rows, 1], s=4, color=cmap(i % 20), label=name)
    axes[0].set_title("coloured by subject")
    axes[0].legend(fontsize=6, markerscale=3, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4)
    axes[1].scatter(points[:, 0], points[:, 1], s=4, c=tax.labels, cmap="tab20")
    axes[1].set_title(f"coloured by k-means cluster (k={tax.k})")
    for ax in axes:
        ax.set_xlabel(f"PC1 ({ratio[0]:.0%})")
        ax.set_ylabel(f"PC2 ({ratio[1]:.0%})" if len(ratio) > 1 else "PC2")
    section = Section("Taxonomy", [_png(fig)])
    section.rows = [("k (max silhouette)", str(tax.k)), ("ARI vs subjects", _f(tax.ari)),
                    ("NMI vs subjects", _f(tax.nmi))]
    section.rows += [(f"silhouette k={k}", _f(v)) for k, v in tax.silhouette_by_k.items()]
    section.table = (["cluster", "size", "subject mix", "most typical question"], [
        [str(j), str(c.size), ", ".join(f"{s} {share:.0%}" for s, share in c.subject_mix[:3]),
         " ".join(data.texts[c.typical[0]].split())[:140] if c.typical else ""]
        for j, c in enumerate(tax.clusters)])

    llm_dirs = unit_rows(router.llm_vectors)
    llm_points = (llm_dirs - mean) @ components.T
    llm_norms = np.linalg.norm(router.llm_vectors, axis=1)
    # Two figures, each cropped to its own labels: full LLM names, however long, are never cut or overlapped.
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    bars, bar_ax = plt.subplots(figsize=(5.5, max(3.0, 0.16 * len(router.llms) + 1.0)))
    axes = (ax, bar_ax)
    axes[0].scatter(points[:, 0], points[:, 1], s=3, color="0.85")
    axes[0].scatter(llm_points[:, 0], llm_points[:, 1], s=25, color="C3")
    # Naming every LLM makes an unreadable pile; name the strongest and weakest few (all of them when few).
    named = np.argsort(-llm_norms)
    named = named if len(named) <= 10 else np.r_[named[:5], named[-3:]]
    for i in named:
        axes[0].annotate(router.llms[i], tuple(llm_points[i]), fontsize=6)
    axes[0].set_title("LLM directions in the question PCA plane")
    order = np.argsort(llm_norms)
    axes[1].barh([router.llms[i] for i in order], llm_norms[order])
    axes[1].tick_params(axis="y", labelsize=6)
    axes[1].set_xlabel("‖m‖ (overall strength)")
    llms = Section("LLM vectors", [_png(fig), _png(bars)])
    cosines = llm_dirs @ llm_dirs.T
    off = cosines[~np.eye(len(router.llms), dtype=bool)]
    llms.rows = [("LLMs", str(len(router.llms))), ("‖m‖ min / median / max",
                 f"{llm_norms.min():.2f} / {np.median(llm_norms):.2f} / {llm_norms.max():.2f}")]
    if off.size:
        llms.rows.append(("pairwise cosine min / median", f"{off.min():.3f} / {np.median(off):.3f}"))
    return [section, llms]


def _calibration(plt: Any, router: Router, probabilities: np.ndarray, data: ResponseData) -> Section:
    section = Section("Calibration")
    column = {name: i for i, name in enumerate(router.llms)}
    data_to_router = np.asarray([column.get(name, -1) for name in data.llm_names], dtype=np.int64)
    cells = data_to_router[data.llm] >= 0 if data.llm.size else np.zeros(0, bool)
    if not cells.any():
        section.notes.append("No LLM of the data is in the router: no calibration curve.")
        return section
    p = probabilities[data.question[cells], data_to_router[data.llm[cells]]].astype(float)
    y = data.correct[cells]
    table = reliability_table(y, p, ECE_BINS)
    filled = table.count > 0
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    ax.plot(table.mean_predicted[filled], table.observed_rate[filled], "o-")
    ax.set_xlabel("predicted P(correct)")
    ax.set_ylabel("observed share correct")
    ax.set_title("reliability")
    section.figures.append(_png(fig))
    section.rows = [("cells", str(int(y.size))), ("AUC", _f(roc_auc(y, p))), ("accuracy at 0.5", _f(accuracy(y, p))),
                    (f"ECE ({ECE_BINS} bins)", _f(table.calibration_error()))]
    return section


def _probe(plt: Any, vectors: np.ndarray, data: ResponseData, seed: int) -> Section:
    section = Section("Arithmetic probe")
    labels = np.asarray([needs_calculation(t) for t in data.texts])
    rng = np.random.default_rng(seed)
    fit_rows = rng.random(data.n_questions) < 0.5
    non_math = np.asarray([s.lower() != "math" for s in data.subjects.astype(str)])
    held = ~fit_rows & non_math
    section.notes.append("Label rule: at least 75% of the lettered options are numbers, or (without options) a "
                         "calculation keyword. Fitted on a random half, scored on the other half's non-math "
                         "questions.")
    if labels[fit_rows].all() or not labels[fit_rows].any() or labels[held].all() or not labels[held].any():
        section.notes.append("Both labels are not present in both halves: no probe.")
        return section
    fitted = probe_vectors(vectors[fit_rows & labels], vectors[fit_rows & ~labels])
    scores = fitted.score(vectors[held])
    auc = roc_auc(labels[held], scores)
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.hist([scores[labels[held]], scores[~labels[held]]], bins=30, label=["needs calculation", "does not"],
            histtype="step")
    ax.set_xlabel("probe score")
    ax.legend()
    section.figures.append(_png(fig))
    section.rows = [("labelled 'needs calculation'", f"{int(labels.sum())} of {data.n_questions}"),
                    ("held-out non-math questions", str(int(held.sum()))), ("held-out AUC", _f(auc))]
    return section


def _answers_in_router_order(router: Router, data: ResponseData) -> np.ndarray:
    columns = [data.llm_names.index(name) if name in data.llm_names else -1 for name in router.llms]
    return answer_matrix(data.question, data.llm, data.correct, data.n_questions, columns)


def _onboarding(plt: Any, router: Router, questions: EncodedQuestions, data: ResponseData, seed: int) -> Section:
    section = Section("Onboarding")
    # The refitted LLM vector against the router's own, both without neighbour votes: the vectors are compared.
    # The features go along for the LLMs add-llm gave a correction, whose probabilities read them.
    curves = onboarding_curves(router.with_neighbours(None), questions, _answers_in_router_order(router, data), seed)
    if not curves:
        section.notes.append(f"No LLM of the router has {MIN_ANSWERS} answers here: nothing to refit.")
        return section
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for number, (name, points) in enumerate(curves.items()):
        counts = [n for n, _, _ in points]
        ax.plot(counts, [a for _, a, _ in points], "o-", color=f"C{number}", label=f"{name}, refitted")
        ax.plot(counts, [b for _, _, b in points], ":", color=f"C{number}", label=f"{name}, router's own vector")
        section.rows += [(f"{name}: log-loss from {n} answers", f"{_f(a)} (own vector {_f(b)})")
                         for n, a, b in points]
    ax.set_xscale("log")
    ax.set_xlabel("answers the LLM's vector is fitted from")
    ax.set_ylabel("log-loss on its other answered questions")
    ax.legend(fontsize=7)
    section.figures.append(_png(fig))
    section.notes.append("Each LLM is removed and added back from n of its answers (add_llm, mean of "
                         f"{REPEATS} draws). The router's adapter saw these LLMs in training: "
                         "docs/research/onboarding.md measures LLMs it never saw.")
    return section


def _partly(value: RoutingValue) -> str:
    """What the best single LLM's row says when that LLM did not answer every question."""
    if value.best_single_answered == value.n_questions:
        return ""
    return (f"; it answered {value.best_single_answered:,} of {value.n_questions:,}, the others go to the next best "
            "LLM that answered them")


def _unanswered_note(value: RoutingValue) -> str:
    """How far the rows of the section stand in for what `route` does: each rule is scored among the LLMs that
    answered a question, while route chooses among all of them."""
    column = " (the cost rules: column 'own choice unanswered')" if value.curve else ""  # no costs, no such table
    return (f"Each rule is scored by the answer of the LLM it picks among those that answered the question. Among all "
            f"LLMs, as route chooses, the router's pick has no answer here on {value.router_unanswered:.1%} of the "
            f"questions{column}; where that share is large (an LLM that never "
            "answered a benchmark is routed its questions: docs/guide/training-data.md, \"Block-missing data\") "
            "these accuracies say little about what route will get.")


def _quality_and_cost(plt: Any, router: Router, probabilities: np.ndarray, data: ResponseData) -> Section:
    section = Section("Quality and cost")
    answers = _answers_in_router_order(router, data)
    if np.isnan(answers).all():
        section.notes.append("No question here has an answer from an LLM of the router: nothing to route by.")
        return section
    value = routing_value(probabilities, answers, router.llms, router.costs)
    section.rows = [
        ("questions", str(value.n_questions)), ("router (most likely LLM)", _f(value.router)),
        (f"best single LLM in hindsight ({value.best_single_name}{_partly(value)})", _f(value.best_single)),
        ("oracle (any LLM right)", _f(value.oracle)), ("average LLM", _f(value.mean_llm)),
    ]
    if value.router_unanswered > 0 or any(value.curve_unanswered):
        section.notes.append(_unanswered_note(value))
    if value.single:
        name = value.best_priced
        accuracy, cost = value.single[name]
        section.rows.append((f"best single LLM with a cost, in hindsight ({name}, cost {cost:g})", _f(accuracy)))
    if not value.curve:
        section.notes.append("No LLM here has a cost in the router (router.with_costs): no quality–cost curve.")
        return section
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for rule, marker in (("max P − λ·cost", "o-"), ("cheapest with P ≥ t", "s--")):
        points = [(c, a) for r, _, a, c in value.curve if r == rule]
        ax.plot([c for c, _ in points], [a for _, a in points], marker, label=rule)
    for accuracy, cost in value.single.values():
        ax.plot(cost, accuracy, "k.", alpha=0.5)
    for name in cost_frontier(value.single):  # name only the LLMs no cheaper one beats
        accuracy, cost = value.single[name]
        ax.annotate(name, (cost, accuracy), fontsize=6, alpha=0.8)
    ax.axhline(value.oracle, color="C3", ls=":", label="oracle")
    ax.axhline(value.router, color="C2", ls="-.", label="router, every LLM")
    ax.set_xlabel("mean cost per question (the router's cost unit)")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7)
    section.figures.append(_png(fig))
    section.table = (["rule", "setting", "accuracy", "mean cost", "own choice unanswered"],
                     [[r, f"{'λ' if r.startswith('max') else 't'} = {v:.3g}", _f(a), _f(c, 1), f"{u:.1%}"]
                      for (r, v, a, c), u in zip(value.curve, value.curve_unanswered)])
    section.notes.append(f"The cost rules choose among the {value.n_priced} LLMs with a cost (dots: each alone); "
                         "an LLM without one is left out, as route(cost_weight=...) does.")
    return section


def _alignment(plt: Any, router: Router, vectors: np.ndarray) -> Section:
    section = Section("Alignment")
    if not router.has_alignment:
        section.notes.append("This router carries no reference directions: alignment is unavailable.")
        return section
    result = router.alignment(EncodedQuestions(vectors))
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.hist(result.scores, bins=40)
    ax.axvline(result.threshold, color="C3", ls="--", label="in-distribution threshold")
    ax.set_xlabel("alignment with training questions")
    ax.legend()
    section.figures.append(_png(fig))
    section.rows = [("threshold", _f(result.threshold)),
                    ("flagged out of distribution", f"{float(np.mean(~result.in_distribution)):.1%}"),
                    ("median alignment", _f(float(np.median(result.scores))))]
    return section


def _html(router: Router, sections: list[Section]) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>jeirt-lite report</title><style>",
             "body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
             ".row{display:flex;gap:2em;align-items:flex-start;flex-wrap:wrap}"
             "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:2px 6px}"
             ".note{color:#555;font-style:italic}img{max-width:100%}",
             "</style></head><body>", f"<h1>jeirt-lite report: {e(str(router.path.name))}</h1>"]
    for section in sections:
        parts.append(f"<section><h2>{e(section.title)}</h2><div class='row'>")
        for figure in section.figures:
            parts.append(f"<img alt='{e(section.title)}' src='data:image/png;base64,{figure}'>")
        if section.rows:
            parts.append("<table>" + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in section.rows)
                         + "</table>")
        parts.append("</div>")
        for note in section.notes:
            parts.append(f"<p class='note'>{e(note)}</p>")
        if section.table is not None:
            header, body = section.table
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>"
                         + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in body)
                         + "</table>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
