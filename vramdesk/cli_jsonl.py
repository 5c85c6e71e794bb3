"""``vramdesk estimate --jsonl FILE``: one JSON result per input line, in order, on one process or several.

Every line is its own job: whatever it holds (a non-UTF-8 byte, deep nesting, NaN, a model that does not
resolve, even a bug) gives that line's ``{"error": "line N: ..."}`` and the other lines go on.

A file of many lines is estimated by worker processes forked from this one (they start with its imports and its
model facts, so nothing is loaded twice), a batch at a time, and the results are written in input order: one
estimate is CPU work of a fraction of a millisecond, so a batch of thousands is bound by the cores.
``--jobs 1`` keeps everything in this process; standard input is read line by line (a script may write a line
and wait for its answer) unless ``--jobs`` asks for more. A worker that dies (killed, out of memory) does not end
the batch: its lines are estimated again in this process.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any, BinaryIO, TextIO

from .cli_common import ERRORS, CliError

#: longest --jsonl line read (bytes); a longer one is that line's error, and the next lines go on
MAX_LINE = 1024 * 1024
#: lines handed to the workers at once (results are written when their batch is done), and the input bytes past
#: which a batch ends (lines up to MAX_LINE each: a batch of long lines stays about this small in memory)
BATCH = 2048
BATCH_BYTES = 16 * 1024 * 1024
#: a file this large or larger is worth worker processes (about 500 lines); smaller ones run here
PARALLEL_FROM_BYTES = 64 * 1024
#: most worker processes --jobs 0 (one per core) starts
MOST_JOBS = 8

#: one line's result as a dict (the command line's reading of a line and its estimate)
LineReader = Callable[[bytes], dict[str, Any]]


def _lines(fh: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) of each non-blank line; None for a line longer than MAX_LINE (skipped, not held)."""
    lineno = 0
    while line := fh.readline(MAX_LINE + 1):
        lineno += 1
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while (rest := fh.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
            yield lineno, None
        elif line.strip():
            yield lineno, line


def _batches(items: Iterator[tuple[int, bytes | None]]) -> Iterator[list[tuple[int, bytes | None]]]:
    """``items`` in batches of at most BATCH lines and BATCH_BYTES bytes (one line at least)."""
    batch: list[tuple[int, bytes | None]] = []
    size = 0
    for item in items:
        batch.append(item)
        size += len(item[1] or b"")
        if len(batch) >= BATCH or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def line_text(read: LineReader, item: tuple[int, bytes | None]) -> tuple[str, bool]:
    """The output line for one input line, and whether it is an error."""
    lineno, line = item
    try:
        if line is None:
            raise CliError(f"longer than {MAX_LINE:,} bytes")
        return json.dumps(read(line), allow_nan=False, check_circular=False), False
    except ERRORS as err:
        error = " ".join(str(err).split())
    except Exception as err:  # a bug: this line's error, not the end of the batch
        error = f"internal error ({type(err).__name__}: {' '.join(str(err).split())[:500]})"
    return json.dumps({"error": f"line {lineno}: {error}"}), True


def workers_for(path: str, jobs: int) -> int:
    """How many worker processes a run over ``path`` uses (1: this process). ``jobs`` 0 = one per core, for a
    file large enough; workers are forked, so only where fork is available and this process has no other thread
    (forking a threaded process can deadlock)."""
    if jobs == 1:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 1
    if jobs > 1:
        return jobs
    if path == "-" or not os.path.isfile(path) or os.path.getsize(path) < PARALLEL_FROM_BYTES:
        return 1
    return max(1, min(MOST_JOBS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))


def run(path: str, out: TextIO, read: LineReader, jobs: int = 0) -> int:
    """Estimate every line of ``path`` ('-' = standard input) into ``out``; 1 when any line failed."""
    if path == "-":
        stdin = getattr(sys.stdin, "buffer", None)  # a text stream replaced by a test has no buffer
        fh: BinaryIO = stdin if stdin is not None else io.BytesIO(sys.stdin.read().encode("utf-8", "replace"))
    else:
        fh = open(path, "rb")  # noqa: SIM115
    try:
        n = workers_for(path, jobs)
        one = partial(line_text, read)
        failures = _in_workers(_lines(fh), out, one, n) if n > 1 else _here(_lines(fh), out, one)
    finally:
        if path != "-":
            fh.close()
    return 0 if failures == 0 else 1


def _here(items: Iterator[tuple[int, bytes | None]], out: TextIO, one: Callable[..., tuple[str, bool]]) -> int:
    failures = 0
    for item in items:
        text, failed = one(item)
        failures += failed
        out.write(text + "\n")
    return failures


def _in_workers(
    items: Iterator[tuple[int, bytes | None]], out: TextIO, one: Callable[..., tuple[str, bool]], n: int
) -> int:
    failures = 0
    pool: ProcessPoolExecutor | None = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"))
    try:
        for batch in _batches(items):
            results: list[tuple[str, bool]] | None = None
            if pool is not None:
                try:
                    results = list(pool.map(one, batch, chunksize=max(1, len(batch) // (4 * n))))
                except BrokenProcessPool:
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = None  # (a worker died: this batch and the rest run here)
            if results is None:
                results = [one(item) for item in batch]
            for text, failed in results:
                failures += failed
                out.write(text + "\n")
    finally:
        if pool is not None:
            pool.shutdown()
    return failures
