"""Give a router's LLMs their plain names and the cost proxy without invented values (a rerunnable migration).

    python -m scripts.plain_llm_names                       # the router shipped in the package, in place
    python -m scripts.plain_llm_names --router my_router    # any router trained on data/mmlu_pro

Routers trained before data/mmlu_pro/models.csv had a plain `name` column carry the source's labels, such as
"gemini-3.1-pro (eval_results/merged)": a provenance note in the name, which `--llms A,B` cannot pass. This maps
every label in the `display_name` column to its `name`, and replaces the stored costs with the parameter-count
proxy (scripts.cost_proxies), which leaves LLMs of unknown size without a cost instead of the 200 B
they used to get. Running it again changes nothing; it only touches router.json (names, costs, file hashes).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from jeirt_lite import Router

from scripts.cost_proxies import cost_proxies

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = REPO_ROOT / "data" / "mmlu_pro" / "models.csv"
DEFAULT_ROUTER = REPO_ROOT / "python" / "jeirt_lite" / "default_router"


def plain_names(models_csv: Path) -> dict[str, str]:
    """{display_name: name} for the rows of a models.csv whose display name differs from the plain name."""
    with open(models_csv, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {row["display_name"]: row["name"] for row in rows if row["display_name"] != row["name"]}


def migrate(router_path: Path, models_csv: Path = DEFAULT_MODELS) -> list[str]:
    """Rename and re-cost the router at `router_path` in place; returns what changed, one line each."""
    router = Router.load(router_path, threads=1)
    mapping = {old: new for old, new in plain_names(models_csv).items() if old in router.llms}
    renamed = router.rename_llms(mapping)
    costs = cost_proxies(list(renamed.llms))
    changes = [f"renamed {old!r} -> {new!r}" for old, new in mapping.items()]
    changes += [f"cost of {name} removed (no public size)" for name in renamed.costs if name not in costs]
    if mapping or renamed.costs != costs:
        renamed.with_costs(costs, replace=True).save(router_path, overwrite=True)
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--router", type=Path, default=DEFAULT_ROUTER, help="router folder, rewritten in place")
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS, help="models.csv with name, display_name")
    args = parser.parse_args(argv)
    changes = migrate(args.router, args.models)
    print("\n".join(changes) if changes else f"{args.router}: already plain names and proxy costs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
