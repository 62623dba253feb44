"""Finding results files under the given directories and indexing them while they grow.

A JSONL file is read once, front to back, in bounded steps: each complete line
is decoded with the record classes (so the viewer accepts exactly what the
other commands accept), its byte offset and a few numbers (:mod:`.facts`) are
kept, and the record is dropped. Later reads seek to the offset, so a 1 GB
file opens at once and pages are served while the rest is still being
indexed. When the file grows (a run in progress), the next pass continues
from where the last one stopped; a line still being written (no newline yet,
and not a whole JSON value) waits for the next pass. A file that shrank, was
replaced (another inode), or was written again from the start (its first
64 KiB changed, or a line end moved) is indexed again from the start.

Files are opened read-only, one open per read (never "check, then open"), and
anything but a regular file is refused; a line longer than :data:`LINE_LIMIT`
and a document larger than :data:`DOC_LIMIT` are reported, not read.
"""

from __future__ import annotations

import hashlib
import math
import os
import stat
import threading
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from waza.protocol.codec import RecordError
from waza.protocol.records import CaptureResult
from waza.protocol.suite_records import SuiteResult
from waza.protocol.trial_records import CalibrationReport, TrialResult
from waza.runner.analysis.runs import kind_of
from waza.runner.view.facts import Fact, FileTotals, fact_of

__all__ = ["DOC_LIMIT", "LINE_LIMIT", "Index", "Kind", "Registry", "open_regular"]

Kind = Literal["capture", "trials", "suite", "labels", "calibration"]
Result = CaptureResult | TrialResult

#: A line longer than this is reported as a problem and skipped, never held in memory.
LINE_LIMIT = 64 * 1024 * 1024
#: A whole-document file (a suite result, a calibration report) larger than this is not opened.
DOC_LIMIT = 64 * 1024 * 1024
#: Bytes one indexing step reads from one file before the indexer looks at the others.
STEP_BYTES = 8 * 1024 * 1024
#: Problems (bad lines) remembered per file; the count goes on.
PROBLEM_LIMIT = 100
SUFFIXES = (".jsonl", ".json", ".ndjson")
#: The first bytes of a growing file are checked again when it changes size: a file written anew
#: from the start (a new run to the same output) is indexed again.
HEAD_BYTES = 64 * 1024


class NotRegular(OSError):
    """The path is a directory, a FIFO, a device or a socket: never read."""


def open_regular(path: Path) -> IO[bytes]:
    """Open read-only, then check the open file is regular (no window between check and open)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _digest(f: IO[bytes], length: int) -> bytes:
    f.seek(0)
    return hashlib.blake2b(f.read(length), digest_size=16).digest()


def _first_line(path: Path) -> bytes:
    with open_regular(path) as f:
        for line in iter(lambda: f.readline(LINE_LIMIT + 1), b""):
            if line.strip():
                return line.lstrip(b"\xef\xbb\xbf").strip()
    return b""


def _read_document(path: Path) -> Any:
    with open_regular(path) as f:
        data = f.read(DOC_LIMIT + 1)
    if len(data) > DOC_LIMIT:
        raise ValueError(f"larger than {DOC_LIMIT // (1024 * 1024)} MiB, not opened")
    return orjson.loads(data)


def classify(value: Any) -> Kind | None:
    """Which kind of file starts with (or is) ``value``; None for anything the viewer does not show."""
    if not isinstance(value, dict):
        return None
    if {"suite", "summary", "tasks"} <= value.keys():
        return "suite"
    if {"comparisons", "items", "results"} <= value.keys():
        return "calibration"
    if kind_of(value) == "trials":
        return "trials"
    if "sample" in value and "pass" in value and "id" in value:
        return "labels"
    if {"id", "input", "output"} <= value.keys() and "steps" not in value:
        return "capture"
    return None


def sniff(path: Path) -> Kind | None:
    """The kind of file ``path`` holds, from its first line (a ``.json`` document spread over lines is read whole)."""
    line = _first_line(path)
    if not line:
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        if not path.name.endswith(".json"):
            return None
        kind = classify(_read_document(path))
        return kind if kind in ("suite", "calibration") else None
    return classify(value)


@dataclass
class Columns:
    """Per-line facts as parallel arrays (a million lines cost tens of megabytes, not hundreds)."""

    starts: array = field(default_factory=lambda: array("q"))
    lengths: array = field(default_factory=lambda: array("q"))
    numbers: array = field(default_factory=lambda: array("q"))
    ids: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    scores: array = field(default_factory=lambda: array("d"))
    durations: array = field(default_factory=lambda: array("q"))
    tokens: array = field(default_factory=lambda: array("q"))
    tools: array = field(default_factory=lambda: array("q"))
    labels: list[str | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def append(self, start: int, length: int, number: int, fact: Fact) -> None:
        self.starts.append(start)
        self.lengths.append(length)
        self.numbers.append(number)
        self.ids.append(fact.id)
        self.statuses.append(fact.status)
        self.scores.append(math.nan if fact.score is None else fact.score)
        self.durations.append(-1 if fact.duration is None else fact.duration)
        self.tokens.append(-1 if fact.tokens is None else fact.tokens)
        self.tools.append(fact.tool_calls)
        label = fact.trials if fact.trials is not None else (f"#{fact.trial}" if fact.trial is not None else None)
        self.labels.append(label)

    def fact(self, i: int) -> Fact:
        score = self.scores[i]
        return Fact(
            id=self.ids[i],
            status=self.statuses[i],
            score=None if math.isnan(score) else score,
            duration=None if self.durations[i] < 0 else self.durations[i],
            tokens=None if self.tokens[i] < 0 else self.tokens[i],
            tool_calls=self.tools[i],
            trials=self.labels[i],
        )


@dataclass
class Index:
    """One file: its kind, its per-line facts and totals, and how far it has been read."""

    key: str
    path: Path
    kind: Kind
    document: Any = None
    scanned: int = 0
    size: int = 0
    mtime: float = 0.0
    line_number: int = 0
    columns: Columns = field(default_factory=Columns)
    totals: FileTotals = field(default_factory=FileTotals)
    first_line: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    bad_lines: int = 0
    error: str | None = None
    growing: bool = False
    inode: int | None = None
    head_len: int = 0
    head_digest: bytes = b""
    line_ended: bool = True  # the last line read ended with a newline (not a whole JSON value at the end)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def problem(self, number: int, message: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < PROBLEM_LIMIT:
            self.problems.append(f"{self.key}:{number}: {message}" if number else f"{self.key}: {message}")

    # ------------------------------------------------------------ reading records back

    def record(self, i: int) -> Result:
        """The i-th indexed record, read again from its offset."""
        if self.kind == "suite":
            return self._suite_trials()[i]
        with open_regular(self.path) as f:
            f.seek(self.columns.starts[i])
            raw = f.read(self.columns.lengths[i])
        value = orjson.loads(raw)
        cls = TrialResult if self.kind == "trials" else CaptureResult
        return cls.from_dict(value)

    def raw_lines(self, upto: int) -> Iterator[tuple[int, bytes]]:
        """(index, raw line) for the first ``upto`` indexed lines, streamed (for search)."""
        if self.kind == "suite":
            for i, result in enumerate(self._suite_trials()[:upto]):
                yield i, orjson.dumps(result.to_dict())
            return
        with open_regular(self.path) as f:
            for i in range(upto):
                f.seek(self.columns.starts[i])
                yield i, f.read(self.columns.lengths[i])

    def _suite_trials(self) -> list[CaptureResult]:
        suite: SuiteResult = self.document
        return [trial for task in suite.tasks for trial in task.trials]

    # ------------------------------------------------------------ indexing

    def advance(self) -> bool:
        """Read what was added since the last pass (at most :data:`STEP_BYTES`); True when it read anything."""
        try:
            with open_regular(self.path) as f:
                info = os.fstat(f.fileno())
                if self._replaced(f, info):
                    self._reset()
                self.inode = info.st_ino
                self.growing = info.st_size != self.size and self.size != 0
                self.size, self.mtime = info.st_size, info.st_mtime
                if self.kind in ("suite", "calibration", "labels"):
                    return self._load_document(f)
                self.error = None  # readable again
                read = self._read_lines(f)
                self._remember_head(f)
                return read
        except (OSError, ValueError) as exc:
            self.error = f"cannot be read: {exc}"
            return False

    def _replaced(self, f: IO[bytes], info: os.stat_result) -> bool:
        """Another file, a shorter one, a rewritten document, or a line end that is no longer where it was."""
        if self.inode is not None and info.st_ino != self.inode:
            return True
        if self.kind in ("suite", "calibration", "labels"):
            return info.st_mtime != self.mtime
        if info.st_size < self.scanned:
            return True
        if info.st_size == self.size or not self.scanned:
            return False
        if self.head_len and _digest(f, self.head_len) != self.head_digest:
            return True  # written again from the start
        if self.line_ended:
            f.seek(self.scanned - 1)
            return f.read(1) != b"\n"
        return False

    def _remember_head(self, f: IO[bytes]) -> None:
        if self.head_len < HEAD_BYTES and self.scanned > self.head_len:
            self.head_len = min(self.scanned, HEAD_BYTES)
            self.head_digest = _digest(f, self.head_len)

    def _reset(self) -> None:
        with self.lock:
            self.scanned = 0
            self.head_len = 0
            self.line_ended = True
            self.line_number = 0
            self.columns = Columns()
            self.totals = FileTotals()
            self.first_line = {}
            self.problems = []
            self.bad_lines = 0
            self.error = None
            self.document = None

    def _load_document(self, f: IO[bytes]) -> bool:
        if self.scanned >= self.size:
            return False
        self.scanned = self.size
        if self.size > DOC_LIMIT:
            self.error = f"larger than {DOC_LIMIT // (1024 * 1024)} MiB, not opened"
            return True
        data = f.read(DOC_LIMIT + 1)
        try:
            if self.kind == "labels":
                self._count_labels(data)
            elif self.kind == "calibration":
                self.document = CalibrationReport.from_dict(orjson.loads(data))
                self.totals.results = self.document.items
            else:
                self._load_suite(SuiteResult.from_dict(orjson.loads(data)))
        except orjson.JSONDecodeError as exc:
            self.error = f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        except RecordError as exc:
            self.error = str(exc)
        return True

    def _count_labels(self, data: bytes) -> None:
        labelled = lines = 0
        for line in data.splitlines():
            if line.strip():
                lines += 1
                labelled += b'"pass":true' in line.replace(b" ", b"") or b'"pass":false' in line.replace(b" ", b"")
        self.totals.results = lines
        self.totals.scored = labelled

    def _load_suite(self, suite: SuiteResult) -> None:
        with self.lock:
            self.document = suite
            i = 0
            for task in suite.tasks:
                for trial in task.trials:
                    self._add(i, 0, 0, trial)
                    i += 1

    def _add(self, number: int, start: int, length: int, record: Result) -> None:
        fact = fact_of(record)
        self.columns.append(start, length, number, fact)
        self.first_line.setdefault(fact.id, len(self.columns) - 1)
        self.totals.add(record, fact)

    def _read_lines(self, f: IO[bytes]) -> bool:
        f.seek(self.scanned)
        budget = STEP_BYTES
        read_any = False
        while budget > 0 and self.scanned < self.size:
            start = self.scanned
            line = f.readline(LINE_LIMIT + 1)
            if not line:
                break
            ended = line.endswith(b"\n")
            if not ended and len(line) > LINE_LIMIT:
                if not self._skip_long(f):
                    break  # the long line is not finished yet
                self.line_number += 1
                self.problem(self.line_number, f"line longer than {LINE_LIMIT // (1024 * 1024)} MiB, not shown")
                read_any = True
                continue
            text = line.strip()
            if not ended and not self._whole(text):
                break  # still being written
            self.scanned = start + len(line)
            self.line_ended = ended
            budget -= len(line)
            self.line_number += 1
            read_any = True
            if self.line_number == 1:
                text = text.removeprefix(b"\xef\xbb\xbf")
            if text:
                self._take(start, len(line), text)
        return read_any

    def _skip_long(self, f: IO[bytes]) -> bool:
        """Move past a line too long to keep; False when its end has not been written yet."""
        while chunk := f.read(1 << 20):
            cut = chunk.find(b"\n")
            if cut >= 0:
                self.scanned = f.tell() - len(chunk) + cut + 1
                self.line_ended = True
                return True
        return False

    @staticmethod
    def _whole(text: bytes) -> bool:
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            return False
        return True

    def _take(self, start: int, length: int, text: bytes) -> None:
        number = self.line_number
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            self.problem(number, f"invalid JSON ({exc.msg} at column {exc.colno})")
            return
        kind = kind_of(value)
        if kind != self.kind:
            self.problem(number, f"is a {kind} result, but the file started with {self.kind} results")
            return
        try:
            record = (TrialResult if kind == "trials" else CaptureResult).from_dict(value)
        except RecordError as exc:
            self.problem(number, f"field {exc.path!r}: {exc.message}" if exc.path else exc.message)
            return
        with self.lock:
            self._add(number, start, length, record)


@dataclass
class Registry:
    """Every file the viewer shows, kept up to date by one background thread."""

    roots: list[Path]
    files: list[Path]
    #: seconds between passes over the known files, and between walks looking for new ones
    interval: float = 0.5
    walk_interval: float = 2.0
    indexes: dict[str, Index] = field(default_factory=dict)
    _seen: dict[Path, float] = field(default_factory=dict)
    _next_walk: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def candidates(self) -> Iterator[Path]:
        """The given files, then every *.jsonl / *.json under the given directories (hidden ones skipped)."""
        yield from self.files
        for root in self.roots:
            for folder, dirs, names in os.walk(root, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
                for name in sorted(names):
                    if name.endswith(SUFFIXES) and not name.startswith("."):
                        yield Path(folder) / name

    def scan(self) -> None:
        """Find new files (at most every :attr:`walk_interval`), then read a step of each file that grew,
        round the files until all are caught up."""
        now = time.monotonic()
        if now >= self._next_walk:
            self._next_walk = now + self.walk_interval
            self.discover()
        while not self._stop.is_set():
            read = [index.advance() for index in self.listing()]  # every file gets its step, no short-circuit
            if not any(read):
                return

    def discover(self) -> None:
        known = {i.path for i in self.indexes.values()}
        for path in self.candidates():
            if path in known:
                continue
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if self._seen.get(path) == size:
                continue  # looked at before and not a results file; look again when it changes
            self._seen[path] = size
            try:
                kind = sniff(path)
            except (OSError, ValueError):
                continue
            if kind is not None:
                index = Index(key=str(path), path=path, kind=kind)
                with self._lock:
                    self.indexes[index.key] = index

    def get(self, key: str) -> Index | None:
        with self._lock:
            return self.indexes.get(key)

    def listing(self) -> list[Index]:
        with self._lock:
            return list(self.indexes.values())

    def start(self) -> None:
        """Index in the background from now on: pages are served while a large file is still being read."""
        self._thread = threading.Thread(target=self._loop, name="waza-view-index", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                self.scan()
            except OSError:
                pass  # a directory vanished mid-walk: the next pass sees the new state
            if self._stop.wait(self.interval):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
