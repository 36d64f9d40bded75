"""A .npy file's bytes written by hand, so that tests can give the readers headers NumPy itself would not write."""

from __future__ import annotations

MAGIC = b"\x93NUMPY"


def npy_bytes(header: str, version: int = 1, data: bytes = b"", encoding: str = "latin1") -> bytes:
    """Magic, format `version`.0, the header's size (2 bytes in format 1.0, else 4), the header, then `data`."""
    raw = header.encode(encoding)
    size = len(raw).to_bytes(2 if version == 1 else 4, "little")
    return MAGIC + bytes([version, 0]) + size + raw + data
