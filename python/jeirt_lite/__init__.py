"""jeirt-lite: tells which LLM will answer a question correctly, before you ask any of them.

Three public names: `Router` (load a router folder, route texts), `RouteResult`, `JeirtError`; the raw scoring
kernels are in `jeirt_lite.kernels`.
"""

__version__ = "0.1.0"

from .errors import JeirtError
from .results import RouteResult
from .router import Router

__all__ = ["JeirtError", "RouteResult", "Router", "__version__"]
