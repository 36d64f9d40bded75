"""Micro-batching: requests that arrive together are answered by one router call, in one worker thread.

Encoding and the neighbour votes cost much less per question in a batch than one question at a time
(docs/research/throughput.md, "The HTTP service", has the measured numbers), so the service gathers the requests
that arrive while the router is busy (and, while requests come in together, those of a short wait more) and hands
them to the worker as one batch.
One worker thread: the router's own `threads` setting already spreads one call over the cores, and two calls at
once would only fight over them. The event loop never runs the router, so it keeps accepting and answering while a batch runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Generic, Optional, TypeVar

Job = TypeVar("Job")
Answer = TypeVar("Answer")


@dataclass
class _Pending(Generic[Job, Answer]):
    job: Job
    size: int
    future: asyncio.Future[Answer] = field(repr=False)


class MicroBatcher(Generic[Job, Answer]):
    """Runs `run(jobs) -> answers` (one answer per job, in order) in one worker thread, on batches of jobs.

    A batch starts as soon as the worker is free and a job waits; it takes the jobs waiting then, up to
    `max_batch` questions (a larger job goes alone). When the previous batch held several jobs, it first waits
    `max_wait` seconds for more to arrive.
    `run` must answer every job itself, failures included: an exception out of it fails the whole batch.
    """

    def __init__(
        self,
        run: Callable[[Sequence[Job]], list[Answer]],
        *,
        max_wait: float,
        max_batch: int,
    ) -> None:
        self._run = run
        self._max_wait = max_wait
        self._max_batch = max_batch
        self._waiting: list[_Pending[Job, Answer]] = []
        self._wake: Optional[asyncio.Event] = None
        self._task: Optional[asyncio.Task[None]] = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jeirt-lite-router")
        self._busy = 0  # jobs in the batch the worker is running
        self._stopping = False
        self._last_jobs = 0
        self.batches = 0  # batches run so far, and the jobs in them (for the bench and the tests)
        self.jobs = 0

    @property
    def unanswered(self) -> int:
        """Jobs submitted and not answered yet: waiting, or in the batch the worker is running."""
        return len(self._waiting) + self._busy

    def start(self) -> None:
        """Start taking jobs (call from the event loop that will submit them)."""
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._dispatch())

    async def stop(self) -> None:
        """Stop once the batch in progress is done. Called after the server has answered every request it took,
        or given up on them at its shutdown timeout: a job still waiting then has no one to answer."""
        self._stopping = True
        while self._busy:
            await asyncio.sleep(0.01)
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for pending in self._waiting:
            pending.future.cancel()
        self._waiting = []
        self._worker.shutdown(wait=True)

    async def submit(self, job: Job, size: int) -> Answer:
        """The answer to `job` (`size`: its number of questions), once its batch has run."""
        assert self._wake is not None, "MicroBatcher.start was not called"
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Pending(job, size, future))
        self._wake.set()
        return await future

    async def _dispatch(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._waiting or self._stopping:
                continue
            # Wait for company only while requests come in together (the last batch had several): a lone client
            # is then never delayed, and under load the wait makes fewer, larger batches.
            if self._max_wait > 0 and self._last_jobs > 1 and self._questions_waiting() < self._max_batch:
                await asyncio.sleep(self._max_wait)
            batch = self._take()
            self._busy = len(batch)
            try:
                answers = await loop.run_in_executor(self._worker, self._run, [p.job for p in batch])
                if len(answers) != len(batch):  # else the requests left over would wait for ever
                    raise RuntimeError(f"the worker gave {len(answers)} answers to a batch of {len(batch)} requests")
            except BaseException as error:  # handed to the waiting requests, which report it
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_exception(error)
                if isinstance(error, asyncio.CancelledError):
                    raise
            else:
                for pending, answer in zip(batch, answers):
                    if not pending.future.done():  # its client may have gone away
                        pending.future.set_result(answer)
            finally:
                self._busy = 0
            self.batches += 1
            self.jobs += len(batch)
            self._last_jobs = len(batch)
            if self._waiting:
                self._wake.set()

    def _questions_waiting(self) -> int:
        return sum(p.size for p in self._waiting)

    def _take(self) -> list[_Pending[Job, Answer]]:
        """The oldest waiting jobs up to max_batch questions (always at least one)."""
        total, count = 0, 0
        for pending in self._waiting:
            if count and total + pending.size > self._max_batch:
                break
            total += pending.size
            count += 1
        batch, self._waiting = self._waiting[:count], self._waiting[count:]
        return batch
