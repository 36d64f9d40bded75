"""jeirt-lite: tells which LLM will answer a question correctly, before you ask any of them.

The public API, in one place: the names in `__all__` (`Router` loads a router folder and routes texts,
`EncodedQuestions` what `Router.encode` returns and every scoring method takes, `RouteResult`, `JeirtError`, `kernels` the raw Rust scoring kernels), and these modules:

- `jeirt_lite.analysis`: a router's geometry (difficulty, taxonomy, probes, alignment, the HTML report);
- `jeirt_lite.batch`: `score_file`, streaming scoring of question bank files (what `jeirt-lite score` runs);
- `jeirt_lite.ray_engine`: the same on Ray Data (`pip install "jeirt-lite[ray]"`);
- `jeirt_lite.cli`: the `jeirt-lite` command line (`main`).

Every other module is internal, whatever its name; modules whose names start with an underscore always are.
"""

__version__ = "0.1.0"

from . import kernels
from ._errors import JeirtError
from ._questions import EncodedQuestions
from ._results import RouteResult
from ._router import Router

__all__ = ["EncodedQuestions", "JeirtError", "RouteResult", "Router", "__version__", "kernels"]
