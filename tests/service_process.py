"""`jeirt-lite serve` in a real subprocess on a free loopback port, for the service tests and the bench.

The service is started with `--port 0`: it binds a free port itself and names it on stderr, so two runs never
race for a port. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Optional

START_TIMEOUT_S = 120.0  # loading the router on a busy 2-core machine; normally 2-3 s
STOP_TIMEOUT_S = 10.0  # the bound on a SIGTERM


@dataclass
class Service:
    process: subprocess.Popen[str]
    url: str
    port: int
    stderr: list[str] = field(default_factory=list)

    def health(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/healthz", timeout=30) as response:
            counts: dict[str, Any] = json.loads(response.read())
        return counts

    def terminate(self) -> Optional[int]:
        """SIGTERM, then the exit code (None if it did not exit within STOP_TIMEOUT_S; it is killed then)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT_S)
            return None


def _pump(stream: Any, lines: list[str], first: queue.Queue[Optional[str]]) -> None:
    for line in stream:
        lines.append(line)
        first.put(line)
    first.put(None)


@contextmanager
def running_service(*options: str, env: Optional[dict[str, str]] = None) -> Iterator[Service]:
    """The service started with `options` (after --host 127.0.0.1 --port 0), stopped with SIGTERM at the end."""
    command: Sequence[str] = [sys.executable, "-m", "jeirt_lite", "serve", "--host", "127.0.0.1", "--port", "0",
                              *options]
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=env if env is not None else dict(os.environ),
    )
    lines: list[str] = []
    first: queue.Queue[Optional[str]] = queue.Queue()
    threading.Thread(target=_pump, args=(process.stderr, lines, first), daemon=True).start()
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        port = None
        while port is None:
            try:
                line = first.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"the service did not start in {START_TIMEOUT_S:.0f} s: {''.join(lines)}") from None
            if line is None:
                raise AssertionError(f"the service exited ({process.wait()}) before listening: {''.join(lines)}")
            if "listening on http://127.0.0.1:" in line:
                port = int(line.split("listening on http://127.0.0.1:")[1].split()[0])
        yield Service(process, f"http://127.0.0.1:{port}", port, lines)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT_S)
