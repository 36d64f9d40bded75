"""Texts encoded in the background while the caller does other work: `score` and `route` over many texts.

A static router's Rust fast path encodes so fast that reading the input and writing the output (Python, under
the GIL) are a large part of a run. With more than one thread, each batch of texts is handed to the Rust pool
as a background job (`StaticEncoder.encode_start`: no Python thread involved, so the pool never waits for the
GIL) and collected in input order, while the caller reads the next batches and writes the finished ones. At
most `IN_FLIGHT` batches are handed over and not yet collected, so memory stays flat.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

import numpy as np

from ._router import Router
from ._static_path import PendingVectors, StaticEncoder

# Batches handed to the encoder and not yet collected: while the caller waits for the oldest, the others keep
# the pool busy; each holds its texts and vectors.
IN_FLIGHT = 3


def pipelines(router: Router) -> bool:
    """Whether texts are encoded in the background: the Rust fast path on more than one thread. (With the ONNX
    encoder the encoder is nearly all the time and already uses every core. The background jobs give question
    vectors only, so a router that reads features (onboarded corrections, neighbour votes) encodes vectors and
    features on the calling thread, still in Rust.)"""
    return router.fast_path and router.threads > 1 and not router.needs_features


def scoring_copy(router: Router) -> Router:
    """The same router scoring on the calling thread: while the pool is busy encoding, a kernel call queued
    behind those jobs would stall the caller's reading and writing."""
    return Router(router._artifact, threads=1, encoder=router._encoder)


def start_encoding(router: Router, texts: list[str]) -> PendingVectors:
    """Start encoding texts already checked as `Router.encode` checks them (strings, not blank, valid UTF-8)."""
    encoder = router._encoder
    assert isinstance(encoder, StaticEncoder)
    limit = router.manifest.encoder.max_chars
    return encoder.encode_start([text[:limit] for text in texts])


def encoded_batches(router: Router, batches: Iterable[list[str]]) -> Iterator[tuple[list[str], np.ndarray]]:
    """(texts, question vectors) of each batch, in order; an error raised by `batches` comes after the batches
    read before it, as it would without the overlap."""
    in_flight: deque[tuple[list[str], PendingVectors]] = deque()
    source = iter(batches)
    while True:
        try:
            texts = next(source)
        except StopIteration:
            break
        except BaseException:
            while in_flight:
                done, pending = in_flight.popleft()
                yield done, pending.result()
            raise
        in_flight.append((texts, start_encoding(router, texts)))
        if len(in_flight) >= IN_FLIGHT:
            done, pending = in_flight.popleft()
            yield done, pending.result()
    while in_flight:
        done, pending = in_flight.popleft()
        yield done, pending.result()
