"""Convert router folders written in an older format to the current one, in place (atomically).

    python -m jeirt_lite.migrate ROUTER_FOLDER [ROUTER_FOLDER ...]

Format 1 had no binding between router.json and the tables; the folder is checked as format 1 was (every file
against its sha256) and saved again, which stores the LLM names and router.json's digest with the table. The
encoder and tokenizer files are copied byte for byte; a folder already in the current format is left alone.
Rerun it on the shipped router (python/jeirt_lite/default_router) after a rebase that brings an older one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from ._artifact_files import read_manifest_json
from ._errors import JeirtError
from ._manifest import FORMAT_VERSION, check_format
from .artifact import MANIFEST_FILE, load_artifact


def migrate(path: Path) -> bool:
    """Rewrite the router folder at `path` in the current format; False when it already is."""
    version = check_format(read_manifest_json(path / MANIFEST_FILE), str(path / MANIFEST_FILE), allow_legacy=True)
    if version == FORMAT_VERSION:
        load_artifact(path)  # still refuse a damaged folder
        return False
    from ._router import Router

    artifact = load_artifact(path, allow_legacy=True)
    Router(artifact, threads=1).save(path, overwrite=True)
    load_artifact(path)
    return True


def main(argv: Optional[Sequence[str]] = None) -> int:
    folders = list(sys.argv[1:] if argv is None else argv)
    if not folders or any(arg.startswith("-") for arg in folders):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for folder in folders:
        try:
            changed = migrate(Path(folder))
        except JeirtError as err:
            print(f"jeirt-lite migrate: {err}", file=sys.stderr)
            return 1
        print(f"{folder}: {'converted to' if changed else 'already in'} format {FORMAT_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
