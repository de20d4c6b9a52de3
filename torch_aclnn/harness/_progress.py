"""A dependency-free progress bar for long CLI runs (written to stderr)."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, label: str = "", stream=None, width: int = 28):
        self.total, self.label, self.width = max(total, 1), label, width
        self.stream = stream or sys.stderr
        self.done = 0
        self.start = time.monotonic()
        self.enabled = self.stream.isatty() or bool(int(__import__("os").environ.get("TORCH_ACLNN_PROGRESS", "1")))

    def step(self, what: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        frac = self.done / self.total
        bar = "#" * int(frac * self.width)
        elapsed = time.monotonic() - self.start
        self.stream.write(f"\r{self.label} [{bar:<{self.width}}] {self.done}/{self.total} {elapsed:5.1f}s {what[:40]:<40}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
