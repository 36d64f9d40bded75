"""The one exception type of jeirt-lite's kernels (a ``ValueError`` subclass)."""

from jeirt_lite._core import JeirtError

__all__ = ["JeirtError"]
