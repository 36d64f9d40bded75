"""The HTTP service behind `jeirt-lite serve` (aiohttp, the `serve` extra): `app` has the endpoints, `requests` the
checks of a request body, `batcher` the micro-batching, `scoring` what the worker thread runs."""
