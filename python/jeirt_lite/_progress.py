"""A dependency-free progress line on stderr: rows done, rows/s and, when the end is known, percent, ETA."""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

# Redrawing more often than this costs time and flickers.
REDRAW_SECONDS = 0.2


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Draws `\\r`-updated lines such as `12,288/100,000 rows  12%  1,234 rows/s  ETA 1:11`.

    Args:
        total: rows expected, when known (Parquet, .npy).
        estimate_total: otherwise a callable estimating the total (for CSV and JSONL: rows read so far divided
            by the share of the file's bytes read), which gives a percentage and an ETA there too.
        enabled: draw at all; callers pass `stream.isatty() and not quiet`, so pipes and logs stay clean.
    """

    def __init__(
        self,
        total: Optional[int] = None,
        *,
        estimate_total: Optional[Callable[[], Optional[float]]] = None,
        enabled: bool = True,
        stream: Optional[TextIO] = None,
        unit: str = "rows",
    ):
        self.total = total
        self.estimate_total = estimate_total
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.unit = unit
        self.done = 0
        self.started = time.perf_counter()
        self.last_draw = 0.0
        self.width = 0

    def advance(self, rows: int) -> None:
        self.done += rows
        now = time.perf_counter()
        if self.enabled and now - self.last_draw >= REDRAW_SECONDS:
            self.last_draw = now
            self._draw(now)

    def line(self, now: Optional[float] = None) -> str:
        elapsed = max(1e-9, (time.perf_counter() if now is None else now) - self.started)
        rate = self.done / elapsed
        share: Optional[float] = None
        if self.total:
            count = f"{self.done:,}/{self.total:,} {self.unit}"
            share = self.done / self.total
        else:
            count = f"{self.done:,} {self.unit}"
            estimate = self.estimate_total() if self.estimate_total is not None else None
            if estimate:
                share = min(1.0, self.done / estimate)
        parts = [count]
        if share is not None:
            parts.append(f"{100 * share:3.0f}%")
        parts.append(f"{rate:,.0f} {self.unit}/s")
        if share is not None and 0 < share < 1:
            parts.append(f"ETA {_clock(elapsed * (1 - share) / share)}")
        return "  ".join(parts)

    def _draw(self, now: float) -> None:
        text = self.line(now)
        padding = " " * max(0, self.width - len(text))  # wipe what a longer previous line left behind
        self.width = len(text)
        self.stream.write("\r" + text + padding)
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line (nothing when disabled)."""
        if self.enabled:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()
