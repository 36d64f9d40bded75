"""Texts encoded in the background while the caller does other work: the one loop behind `score` and `route`
over many texts.

A static router's Rust fast path encodes so fast that reading the input and writing the output (Python, under
the GIL) are a large part of a run. With more than one thread, each batch of texts is handed to the Rust pool
as a background job (`StaticEncoder.encode_start`: no Python thread involved, so the pool never waits for the
GIL) and collected in input order, while the caller reads the next batches and scores and writes the finished
ones. A router with neighbour votes gets them from the same jobs (the search runs on the pool beside the
encoding, from features that never leave Rust), and one with onboarded corrections gets the features too. At
most `IN_FLIGHT` batches are handed over and not yet collected, so memory stays flat.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Optional, TypeVar

import numpy as np

from ._questions import EncodedQuestions, distinct_texts, voted
from ._router import Router
from ._static_path import PendingEncoding, StaticEncoder

# Batches handed to the encoder and not yet collected: while the caller waits for the oldest, the others keep
# the pool busy; each holds its texts and vectors.
IN_FLIGHT = 3

Item = TypeVar("Item")


def pipelines(router: Router) -> bool:
    """Whether texts are encoded in the background: the Rust fast path on more than one thread. (With the ONNX
    encoder the encoder is nearly all the time and already uses every core. A router that reads features needs
    the Rust encoder to give them: it does unless their width differs from the graph's feature output.)"""
    encoder = router._encoder
    return (router.fast_path and router.threads > 1 and isinstance(encoder, StaticEncoder)
            and (not router.needs_features or encoder.gives_features))


def scoring_copy(router: Router) -> Router:
    """The same router scoring on the calling thread: while the pool is busy encoding, a kernel call queued
    behind those jobs would stall the caller's reading and writing."""
    return Router(router._artifact, threads=1, encoder=router._encoder)


def start_encoding(router: Router, texts: list[str]) -> PendingEncoding:
    """Start encoding texts already checked as `Router.encode` checks them (strings, not blank, valid UTF-8),
    with what the router's scoring reads: the features for corrections, the votes' sums for neighbour votes."""
    encoder = router._encoder
    assert isinstance(encoder, StaticEncoder)
    limit = router.manifest.encoder.max_chars
    votes = None if router.neighbours is None else router.neighbours.request()
    return encoder.encode_start([text[:limit] for text in texts], features=router.corrections is not None,
                                votes=votes)


def in_background(
    router: Router, items: Iterable[Item], texts_of: Callable[[Item], list[str]]
) -> Iterator[tuple[Item, EncodedQuestions]]:
    """(item, its texts encoded) for each item, in order, the texts of the next items being encoded meanwhile; an
    error raised by `items` comes after the items read before it, as it would without the overlap. A text an item
    holds more than once is encoded once, as `Router.encode` does."""
    in_flight: deque[tuple[Item, Optional[np.ndarray], PendingEncoding]] = deque()

    def finish() -> tuple[Item, EncodedQuestions]:
        item, rows, pending = in_flight.popleft()
        vectors, features, sums = pending.result()
        if rows is not None:  # each row takes its text's encoding, and its votes
            vectors, features = vectors[rows], None if features is None else features[rows]
            sums = None if sums is None else (sums[0][rows], sums[1][rows])
        return item, (EncodedQuestions(vectors, features) if sums is None else voted(vectors, features, sums))

    source = iter(items)
    while True:
        try:
            item = next(source)
        except StopIteration:
            break
        except BaseException:
            while in_flight:
                yield finish()
            raise
        texts, rows = distinct_texts(texts_of(item))
        in_flight.append((item, rows, start_encoding(router, texts)))
        if len(in_flight) >= IN_FLIGHT:
            yield finish()
    while in_flight:
        yield finish()
