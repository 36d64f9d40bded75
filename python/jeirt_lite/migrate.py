"""Convert router folders written in an older format to the current one, in place (atomically).

    python -m jeirt_lite.migrate ROUTER_FOLDER [ROUTER_FOLDER ...]

Format 1 had no binding between router.json and the tables; the folder is checked as format 1 was (every file
against its sha256) and saved again, which stores the LLM names and router.json's digest with the table. The
encoder and tokenizer files are copied byte for byte; a folder already in the current format is left alone.
Rerun it on the shipped router (python/jeirt_lite/default_router) after a rebase that brings an older one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from ._artifact_files import read_manifest_json
from ._errors import JeirtError
from ._manifest import FORMAT_VERSION, check_format
from .artifact import MANIFEST_FILE, load_artifact, router_folder


def migrate(path: Path) -> bool:
    """Rewrite the router folder at `path` in the current format; False when it already is."""
    router_folder(path)
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
    parser = argparse.ArgumentParser(
        prog="python -m jeirt_lite.migrate",
        description="Convert router folders of an older format to the current one, in place (atomically);\n"
        "a folder already in the current format is checked and left alone.",
        epilog="example:\n  python -m jeirt_lite.migrate ~/routers/my_router",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("folders", nargs="+", type=Path, metavar="ROUTER_FOLDER", help="a router folder to convert")
    for folder in parser.parse_args(argv).folders:
        try:
            changed = migrate(folder)
        except JeirtError as err:
            print(f"{parser.prog}: error: {err}", file=sys.stderr)
            return 1
        print(f"{folder}: {'converted to' if changed else 'already in'} format {FORMAT_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
