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
import sys
import threading
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

import msgspec
import orjson

from waza.protocol.analysis_records import RunKind
from waza.protocol.codec import RecordError
from waza.protocol.io.confined import Refused
from waza.protocol.io.confined import open_regular as open_confined
from waza.protocol.jsonl import JsonlError
from waza.protocol.records import CaptureResult
from waza.protocol.suite_records import SuiteResult
from waza.protocol.trial_records import CalibrationReport, TrialResult
from waza.runner.analysis.comparison import Outcome, trials_outcome
from waza.runner.analysis.runs import kind_of, read_result
from waza.runner.view.facts import ID_LIMIT, Fact, FileTotals, fact_of
from waza.runner.view.watch import Watcher, open_watcher

__all__ = ["DOC_LIMIT", "LINE_LIMIT", "Index", "Kind", "Place", "Registry"]

Kind = Literal["capture", "trials", "suite", "labels", "calibration"]
Result = CaptureResult | TrialResult

#: A line longer than this is reported as a problem and skipped, never held in memory.
LINE_LIMIT = 64 * 1024 * 1024
#: A whole-document file (a suite result, a calibration report) larger than this is not opened.
DOC_LIMIT = 64 * 1024 * 1024
#: Bytes one indexing step reads from one file before the indexer looks at the others.
STEP_BYTES = 8 * 1024 * 1024
#: The indexer's read buffer: lines are taken from it with ``readline`` (the default 8 KiB is a system
#: call every few lines), and every small read (a line end, the head's digest) fills it, so not more.
READ_BUFFER = 64 * 1024
#: Problems (bad lines) remembered per file; the count goes on.
PROBLEM_LIMIT = 100
SUFFIXES = (".jsonl", ".json", ".ndjson")
#: The first bytes of a growing file are checked again when it changes size: a file written anew
#: from the start (a new run to the same output) is indexed again.
HEAD_BYTES = 64 * 1024


class Place(msgspec.Struct, frozen=True):
    """Where a file is: a directory the viewer trusts (one it was given) and the names below it.

    Every open goes through :func:`waza.protocol.io.confined.open_regular`: relative to the
    directory, no symlink followed on the way, non-blocking, and only a regular file is
    read, so a file swapped for a FIFO, a device or a symlink to elsewhere after it was
    listed is refused at once instead of read or waited on.
    """

    root: Path
    parts: tuple[str, ...]

    @classmethod
    def of_file(cls, path: Path) -> Place:
        """A file named on the command line: followed once, to where it is now, then held to that directory."""
        real = path.resolve()
        return cls(real.parent, (real.name,))

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts)

    def open(self, buffering: int = -1) -> IO[bytes]:
        return os.fdopen(open_confined(self.root, list(self.parts)), "rb", buffering=buffering)

    def stat(self) -> os.stat_result:
        """The entry's own status (a symlink is not followed), without opening it."""
        return os.lstat(self.path)


def _digest(f: IO[bytes], length: int) -> bytes:
    f.seek(0)
    return hashlib.blake2b(f.read(length), digest_size=16).digest()


def _first_line(place: Place) -> bytes:
    with place.open() as f:
        for line in iter(lambda: f.readline(LINE_LIMIT + 1), b""):
            if line.strip():
                return line.lstrip(b"\xef\xbb\xbf").strip()
    return b""


def _read_document(place: Place) -> Any:
    with place.open() as f:
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


def sniff(place: Place) -> Kind | None:
    """The kind of file ``place`` holds, from its first line (a ``.json`` document spread over lines is read whole)."""
    line = _first_line(place)
    if not line:
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        if not place.parts[-1].endswith(".json"):
            return None
        kind = classify(_read_document(place))
        return kind if kind in ("suite", "calibration") else None
    return classify(value)


class Columns(msgspec.Struct):
    """Per-line facts as parallel arrays (a million lines cost tens of megabytes, not hundreds)."""

    starts: array[int] = msgspec.field(default_factory=lambda: array("q"))
    lengths: array[int] = msgspec.field(default_factory=lambda: array("q"))
    numbers: array[int] = msgspec.field(default_factory=lambda: array("q"))
    ids: list[str] = msgspec.field(default_factory=list)
    statuses: list[str] = msgspec.field(default_factory=list)
    scores: array[float] = msgspec.field(default_factory=lambda: array("d"))
    durations: array[int] = msgspec.field(default_factory=lambda: array("q"))
    tokens: array[int] = msgspec.field(default_factory=lambda: array("q"))
    tools: array[int] = msgspec.field(default_factory=lambda: array("q"))
    labels: list[str | None] = msgspec.field(default_factory=list)
    whys: list[str] = msgspec.field(default_factory=list)

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
        self.whys.append(fact.why)

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
            why=self.whys[i],
        )


def pair_key(id_: str) -> str:
    """The key a prompt is paired on across runs: its id, or for a very long id its start and a digest of all of it."""
    if len(id_) <= ID_LIMIT:
        return id_
    return id_[:ID_LIMIT] + "#" + hashlib.blake2b(id_.encode(), digest_size=12).hexdigest()


class Index(msgspec.Struct):
    """One file: its kind, its per-line facts and totals, and how far it has been read."""

    key: str
    place: Place
    kind: Kind
    document: Any = None
    scanned: int = 0
    size: int = 0
    mtime: float = 0.0
    line_number: int = 0
    columns: Columns = msgspec.field(default_factory=Columns)
    totals: FileTotals = msgspec.field(default_factory=FileTotals)
    #: first line index of each prompt id (:func:`pair_key`), and the first id found twice (comparisons refuse the file)
    first_line: dict[str, int] = msgspec.field(default_factory=dict)
    duplicate: str | None = None
    #: per line of a trials file, what a comparison needs (``waza compare``'s own outcome, errors excluded)
    outcomes: list[Outcome] = msgspec.field(default_factory=list)
    problems: list[str] = msgspec.field(default_factory=list)
    bad_lines: int = 0
    error: str | None = None
    growing: bool = False
    inode: int | None = None
    head_len: int = 0
    head_digest: bytes = b""
    line_ended: bool = True  # the last line read ended with a newline (not a whole JSON value at the end)
    #: the size at which an unfinished last line was last looked at (0: none): it is not read again until
    #: the file grows, and then only the new bytes are searched for its end
    torn: int = 0
    seen: tuple[int, int, int] | None = None  # (inode, size, mtime) when last read
    lock: threading.Lock = msgspec.field(default_factory=threading.Lock)

    @property
    def path(self) -> Path:
        return self.place.path

    @property
    def caught_up(self) -> bool:
        return self.scanned >= self.size or self.torn == self.size

    def problem(self, number: int, message: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < PROBLEM_LIMIT:
            self.problems.append(f"{self.key}:{number}: {message}" if number else f"{self.key}: {message}")

    # ------------------------------------------------------------ reading records back

    def record(self, i: int) -> Result:
        """The i-th indexed record, read again from its offset."""
        if self.kind == "suite":
            return self._suite_trials()[i]
        with self.place.open() as f:
            f.seek(self.columns.starts[i])
            raw = f.read(self.columns.lengths[i])
        return self._decode(self.columns.numbers[i], raw)

    def records(self) -> Iterator[Result]:
        """Every indexed record in file order, through one open of the file."""
        if self.kind == "suite":
            yield from self._suite_trials()
            return
        with self.lock:
            upto = len(self.columns)
        for i, raw in self.raw_lines(upto):
            yield self._decode(self.columns.numbers[i], raw)

    def _decode(self, number: int, line: bytes) -> Result:
        """The record of an indexed line (as it was indexed: the line was read whole and found good)."""
        kind: RunKind = "trials" if self.kind == "trials" else "capture"
        return read_result(self.key, number, line.strip().removeprefix(b"\xef\xbb\xbf"), kind)[1]

    def raw_lines(self, upto: int) -> Iterator[tuple[int, bytes]]:
        """(index, raw line) for the first ``upto`` indexed lines, streamed (for search)."""
        if self.kind == "suite":
            for i, result in enumerate(self._suite_trials()[:upto]):
                yield i, orjson.dumps(result.to_dict())
            return
        with self.place.open() as f:
            for i in range(upto):
                f.seek(self.columns.starts[i])
                yield i, f.read(self.columns.lengths[i])

    def _suite_trials(self) -> list[CaptureResult]:
        suite: SuiteResult = self.document
        return [trial for task in suite.tasks for trial in task.trials]

    # ------------------------------------------------------------ indexing

    def changed(self) -> bool:
        """Whether the file may hold something not indexed yet (one ``lstat``, nothing opened)."""
        if self.seen is None:
            return True
        try:
            info = self.place.stat()
        except OSError:
            return self.error is None  # gone: say so once
        if (info.st_ino, info.st_size, info.st_mtime_ns) != self.seen:
            return True
        return self.error is None and not self.caught_up

    def advance(self) -> bool:
        """Read what was added since the last pass (at most :data:`STEP_BYTES`); True when it read anything."""
        try:
            with self.place.open(READ_BUFFER) as f:
                info = os.fstat(f.fileno())
                if self._replaced(f, info):
                    self._reset()
                self.inode = info.st_ino
                self.growing = info.st_size != self.size and self.size != 0
                self.size, self.mtime = info.st_size, info.st_mtime
                self.seen = (info.st_ino, info.st_size, info.st_mtime_ns)
                if self.kind in ("suite", "calibration", "labels"):
                    return self._load_document(f)
                self.error = None  # readable again
                read = self._read_lines(f)
                self._remember_head(f)
                return read
        except Refused as exc:
            self.error = f"not read: {exc.strerror or exc}"
        except (OSError, ValueError) as exc:
            self.error = f"cannot be read: {exc}"
        try:  # look again only when the entry changes
            info = self.place.stat()
            self.seen = (info.st_ino, info.st_size, info.st_mtime_ns)
        except OSError:
            self.seen = (0, 0, 0)
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
            self.torn = 0
            self.line_number = 0
            self.columns = Columns()
            self.totals = FileTotals()
            self.first_line = {}
            self.duplicate = None
            self.outcomes = []
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
        key = pair_key(record.id)
        if key in self.first_line:
            if self.duplicate is None:
                first = self.columns.numbers[self.first_line[key]]
                self.duplicate = (
                    f"{self.key}:{number}: duplicate id {record.id[:200]!r} (first on line {first}); runs are paired on ids"
                )
        else:
            self.first_line[key] = len(self.columns) - 1
        if isinstance(record, TrialResult):
            own = sorted({int(k) for k in record.pass_at_k} | {int(k) for k in record.pass_hat_k})
            self.outcomes.append(trials_outcome(record, "exclude", own))
        self.totals.add(record, fact)

    def _torn_may_end(self, f: IO[bytes]) -> bool:
        """Whether the bytes written since the unfinished last line was looked at may finish it."""
        f.seek(self.torn)
        while chunk := f.read(1 << 20):
            if b"\n" in chunk:
                return True
        f.seek(max(self.scanned, self.size - 64))
        return f.read(64).rstrip().endswith(b"}")  # a whole object at the end, with no newline after it

    def _read_lines(self, f: IO[bytes]) -> bool:
        if self.torn:
            if self.size == self.torn or not self._torn_may_end(f):
                self.torn = self.size
                return False
            self.torn = 0
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
                    self.torn = self.size
                    break  # the long line is not finished yet
                self.line_number += 1
                self.problem(self.line_number, f"line longer than {LINE_LIMIT // (1024 * 1024)} MiB, not shown")
                read_any = True
                continue
            text = line.strip()
            if not ended and not self._whole(text):
                self.torn = self.size
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
        if not text.endswith(b"}"):
            return False
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            return False
        return True

    def _take(self, start: int, length: int, text: bytes) -> None:
        number = self.line_number
        try:
            _, record = read_result(self.key, number, text, "trials" if self.kind == "trials" else "capture")
        except JsonlError as exc:
            self.problem(number, f"field {exc.field!r}: {exc.message}" if exc.field else exc.message)
            return
        with self.lock:
            self._add(number, start, length, record)


def _listed(name: str) -> bool:
    return name.endswith(SUFFIXES) and not name.startswith(".")


def _walked(name: str) -> bool:
    return not name.startswith(".") and name not in ("node_modules", "__pycache__")


class Registry(msgspec.Struct):
    """Every file the viewer shows, kept up to date by one background thread.

    With inotify (Linux) the thread sleeps until the kernel says a file or a
    directory changed, so an idle viewer costs nothing however many files it
    shows. Without it, each file is looked at with one ``lstat`` at an interval
    that doubles while the file does not change (from :attr:`interval` up to
    :attr:`slowest`) and drops back when it does; directories are listed again
    on the same schedule.
    """

    roots: list[Path]
    files: list[Path]
    #: seconds between looks at a file that is changing (polling), and the longest wait for one that is not
    interval: float = 0.5
    slowest: float = 16.0
    #: False: never use inotify (the stat-based fallback, also used where inotify is missing)
    inotify: bool = True
    indexes: dict[str, Index] = msgspec.field(default_factory=dict)
    _places: list[Place] = msgspec.field(default_factory=list)
    _seen: dict[Path, tuple[int, int]] = msgspec.field(default_factory=dict)
    _due: dict[str, tuple[float, float]] = msgspec.field(default_factory=dict)
    _walk_due: tuple[float, float] = (0.0, 0.0)
    _stop: threading.Event = msgspec.field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = msgspec.field(default_factory=threading.Lock)
    _watcher: Watcher | None = None
    _told: set[Path] = msgspec.field(default_factory=set)

    def __post_init__(self) -> None:
        self._places = [Place.of_file(p) for p in self.files]

    def _skipped(self, path: Path, exc: BaseException) -> None:
        """A file or folder the viewer cannot read is named on stderr, once, rather than left out unsaid."""
        if path in self._told:
            return
        self._told.add(path)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"waza view: skipped {path}: {why}", file=sys.stderr, flush=True)

    @property
    def watching(self) -> bool:
        """True while inotify tells the indexer what changed (False: the stat-based fallback)."""
        return self._watcher is not None

    def candidates(self) -> Iterator[Place]:
        """The given files, then every *.jsonl / *.json under the given directories.

        Hidden entries are skipped, and so is every symlink below a directory (neither listed nor followed):
        only what is inside the directory is shown.
        """
        yield from self._places
        for root in self.roots:
            yield from self._files_below(root, ())

    def _files_below(self, root: Path, parts: tuple[str, ...]) -> Iterator[Place]:
        folder = root.joinpath(*parts)
        if self._watcher is not None and not self._watcher.watch(folder):
            self._give_up_watching()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda entry: entry.name)
        except FileNotFoundError:
            return  # gone meanwhile
        except OSError as exc:
            self._skipped(folder, exc)
            return
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if _walked(entry.name):
                    yield from self._files_below(root, (*parts, entry.name))
            elif _listed(entry.name):
                yield Place(root, (*parts, entry.name))

    def _give_up_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    def discover(self, places: Iterator[Place] | None = None) -> bool:
        """Add the results files among ``places`` (default: every candidate); True when one was added."""
        known = {i.place for i in self.listing()}
        added = False
        for place in self.candidates() if places is None else places:
            if place in known:
                continue
            try:
                info = place.stat()
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) and place not in self._places:
                continue
            if self._seen.get(place.path) == (info.st_size, info.st_mtime_ns):
                continue  # looked at before and not a results file; look again when it changes
            self._seen[place.path] = (info.st_size, info.st_mtime_ns)
            try:
                kind = sniff(place)
            except FileNotFoundError:
                continue  # gone meanwhile
            except (OSError, ValueError) as exc:
                self._skipped(place.path, exc)
                continue
            if kind is not None:
                index = Index(
                    key=str(place.path) if place not in self._places else str(self._name_of(place)), place=place, kind=kind
                )
                with self._lock:
                    self.indexes[index.key] = index
                added = True
        return added

    def _name_of(self, place: Place) -> Path:
        return self.files[self._places.index(place)]

    def catch_up(self, indexes: list[Index]) -> None:
        """Read a step of each file that changed, round the files until all are caught up."""
        pending = [i for i in indexes if i.changed()]
        while pending and not self._stop.is_set():
            pending = [i for i in pending if i.advance() and not i.caught_up]

    def scan(self) -> None:
        """Find new files and read whatever changed, once (used before serving, and by tests)."""
        self.discover()
        self.catch_up(self.listing())

    def signature(self) -> int:
        """A number that changes whenever anything the runs list shows may have changed (cheap: no row is drawn)."""
        return hash(tuple((i.key, i.scanned, i.size, i.error, i.bad_lines, i.growing) for i in self.listing()))

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
        self._watcher = open_watcher() if self.inotify else None
        if self._watcher is not None:
            for place in self._places:
                if not self._watcher.watch(place.root):
                    self._give_up_watching()
                    break
        self.scan()
        while not self._stop.is_set():
            try:
                if self._watcher is not None:
                    self._on_events()
                else:
                    self._poll()
            except OSError:
                pass  # a directory vanished mid-walk: the next pass sees the new state

    def _on_events(self) -> None:
        assert self._watcher is not None
        events = self._watcher.wait(1.0)
        if events is None:  # the kernel dropped events: look at everything once
            self.scan()
            return
        changed, created = events
        if not changed and not created:
            return
        by_path = {i.path: i for i in self.listing()}
        new: list[Place] = []
        for path in created:
            new += [
                p
                for root in self.roots
                if path.is_relative_to(root)
                for p in self._files_below(root, path.relative_to(root).parts)
            ]
        for path in changed:
            if path in by_path:
                continue
            for root in self.roots:
                if path.is_relative_to(root) and _listed(path.name):
                    parts = path.relative_to(root).parts
                    if all(_walked(part) for part in parts[:-1]):
                        new.append(Place(root, parts))
        if new:
            self.discover(iter(new))
        self.catch_up([by_path[p] for p in changed if p in by_path] + [i for i in self.listing() if i.path not in by_path])

    def _poll(self) -> None:
        """The fallback without inotify: ``lstat`` each file when its turn comes, and back off while nothing changes."""
        now = time.monotonic()
        due, every = self._walk_due
        if now >= due:
            found = self.discover()
            every = self.interval if found or not every else min(every * 2, self.slowest)
            self._walk_due = (now + every, every)
        for index in self.listing():
            due, every = self._due.get(index.key, (0.0, self.interval))
            if now < due:
                continue
            if index.changed():
                self.catch_up([index])
                every = self.interval
            else:
                every = min(every * 2, self.slowest)
            self._due[index.key] = (now + every, every)
        self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._give_up_watching()
