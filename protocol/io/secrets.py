"""Keeping secrets out of what waza writes and out of what graders see.

A variable is secret-like when its name contains KEY, TOKEN, SECRET, PASSWORD,
PASSWD, CREDENTIAL or AUTH (any case), or when it was named as holding a key
(``--api-key-env``, ``--judge-api-key-env``: :func:`mark_secret_env`). Graders
run with such variables removed from their environment; agents keep theirs
(they need their API keys), but any secret value that shows up in a record, a
raw log or a log line is replaced by ``[REDACTED]`` before it is written.

A value is masked in every form it can take: as written, JSON-escaped (a value
holding ``"`` or ``\\``), and line by line (a PEM key spread over a multi-line
string). In JSON lines only string *values* are masked, after decoding, so any
escaping an agent chose is seen through and a secret equal to a field name
(``output``) cannot corrupt a record; object keys are left as they are.

waza's own fields of the records it writes (:data:`OWN_FIELDS`: a result's
``id`` and ``status``, a grade's ``name`` and ``status``, a step's ``type``
and ids...) are never masked either: they hold waza's enumerations, keys and
names, not what an agent or a grader said, so a secret whose value is a
record word (``DB_PASSWORD=passed``) cannot rewrite a verdict. Everything
else, what the agent and the graders wrote (output, trajectory text and tool
input/output, stderr, reasoning, errors, details) and the user's own fields,
is masked.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Collection, Mapping
from typing import Any, TypeAlias

import orjson

__all__ = [
    "MASK",
    "OWN_FIELDS",
    "Redactor",
    "StreamMasker",
    "ValueStreamMasker",
    "for_agents",
    "give_to_agents",
    "holds_waza_keys",
    "is_secret_name",
    "mark_secret_env",
    "marked_names",
    "scrubbed_env",
    "scrubbed_env_bytes",
]

#: A name holding one of these (in any case, as ``str.upper`` sees it) is secret-like. Checked with
#: ``str.find`` on the upper-cased name: a case-insensitive regex took 1 µs a name.
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
MIN_SECRET_LENGTH = 6
MASK = b"[REDACTED]"
_MASK_TEXT = MASK.decode()

#: A record's fields that are waza's own, by where they are: a nested mapping describes the objects under
#: that field (each item of a list); ``None`` keeps the value as it is. One map serves every record waza
#: writes (capture and trial results, a suite's document): their top-level names do not clash.
Fields: TypeAlias = "dict[str, Fields | None]"
_STEP: Fields = dict.fromkeys(("type", "stepId", "role", "status", "kind", "messageId", "toolCallId"))
_RESULT: Fields = {
    **dict.fromkeys(("id", "status", "adapter", "cwd")),
    "grades": dict.fromkeys(("name", "status")),
    "score": {"status": None},
    "trajectory": _STEP,
}
_RESULT["trials"] = _RESULT  # a prompt's trials (TrialResult), a suite task's trials (CaptureResult)
OWN_FIELDS: Fields = {
    **_RESULT,
    **dict.fromkeys(("suite", "file", "model")),
    "summary": dict.fromkeys(("status", "disabled", "filtered", "notRun", "missed")),
    "metrics": dict.fromkeys(("name", "detail")),
    "tasks": {**dict.fromkeys(("id", "name", "file", "status", "tags")), "trials": _RESULT},
    "triggers": {**dict.fromkeys(("skill", "file")), "cases": {"confidence": None}},
}

#: Variables named on the command line as holding a key: secret whatever their name or length.
_marked: set[str] = set()


def mark_secret_env(name: str) -> None:
    """Treat ``name``'s value as a secret from now on (masked even when short, hidden from graders)."""
    _marked.add(name)


def marked_names() -> tuple[str, ...]:
    """The names given to :func:`mark_secret_env` in this process (a Ray job carries them to its node)."""
    return tuple(sorted(_marked))


#: Marked variables the user passes to agents too (``--agent-env NAME``).
_given: set[str] = set()


def give_to_agents(name: str) -> None:
    """Let agents have ``name`` though it is one of waza's own keys (marked: a judge's or an HTTP agent's)."""
    _given.add(name)


def for_agents(env: Mapping[str, str], keep: Collection[str] = ()) -> dict[str, str]:
    """``env`` without waza's own keys (the variables :func:`mark_secret_env` named: the judge's, an HTTP
    agent's), which no agent gets, sandboxed or not, unless given (:func:`give_to_agents`, or ``keep``: a
    sandbox's ``keep_env``). Other secret-like variables stay: an unsandboxed agent runs as the user."""
    return {k: v for k, v in env.items() if k not in _marked or k in _given or k in keep}


def holds_waza_keys(env: Mapping[str, str]) -> bool:
    """Whether :func:`for_agents` would take anything out of ``env`` (checked before copying it)."""
    return any(name in env and name not in _given for name in _marked)


def is_secret_name(name: str) -> bool:
    return name in _marked or _holds_secret_word(name)


def _holds_secret_word(text: str) -> bool:
    upper = text.upper()
    return any(word in upper for word in SECRET_WORDS)


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without secret-like variables (what graders get)."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if not is_secret_name(k)}


def scrubbed_env_bytes(keep: Collection[str] = ()) -> dict[bytes, bytes] | None:
    """The environment a grader starts with, taken at each start: None (inherit waza's as it is)
    when no variable in it is secret-like, else :func:`scrubbed_env` encoded for the spawn, with
    the variables named in ``keep`` given back (the one key an isolated judge needs).

    Handing the child an environment makes ``subprocess`` encode and check every variable at
    every start (a tenth of a one-shot grader's spawn CPU); with nothing to remove, inheriting
    gives the child the same variables for nothing."""
    names = os.fsdecode(b"\0".join(os.environb))  # one decode, not one per variable; NUL: in no name
    if _marked.isdisjoint(names.split("\0")) and not _holds_secret_word(names):
        return None
    env = scrubbed_env()
    env.update((k, os.environ[k]) for k in keep if k in os.environ)
    return {os.fsencode(k): os.fsencode(v) for k, v in env.items()}


class Redactor:
    """Masks the values of secret-like variables in bytes or text about to be written."""

    def __init__(self, env: Mapping[str, str] | None = None, extra: list[str] | None = None) -> None:
        self._env = env
        self._extra = list(extra or [])
        self._generation = -1
        self._texts: list[str] = []
        self._needles: list[bytes] = []
        self._refresh()

    def _refresh(self) -> None:
        if self._generation == len(_marked):
            return
        self._generation = len(_marked)
        env = os.environ if self._env is None else self._env
        values = {v for k, v in env.items() if v and (k in _marked or (is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH))}
        values.update(v for v in self._extra if len(v) >= MIN_SECRET_LENGTH)
        texts = set(values)
        for value in values:
            texts.update(s for line in value.splitlines() if len(s := line.strip()) >= MIN_SECRET_LENGTH)
        # Longest first, so a secret that contains another is masked whole.
        self._texts = sorted(texts, key=len, reverse=True)
        forms = {t.encode() for t in texts} | {orjson.dumps(t)[1:-1] for t in texts}
        self._needles = sorted(forms, key=len, reverse=True)

    @property
    def longest(self) -> int:
        self._refresh()
        return len(self._texts[0]) if self._texts else 0

    def texts(self) -> list[str]:
        """The secret texts masked (values and their lines), longest first."""
        self._refresh()
        return self._texts

    def mask_text(self, value: str) -> str:
        """``value`` with every secret (and every line of a multi-line one) replaced by the mask."""
        self._refresh()
        for text in self._texts:
            if text in value:
                value = value.replace(text, _MASK_TEXT)
        return value

    def mask_json(self, value: Any) -> Any:
        """A decoded JSON value with its strings masked; keys and other values kept as they are."""
        if isinstance(value, str):
            return self.mask_text(value)
        if isinstance(value, list):
            return [self.mask_json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.mask_json(v) for k, v in value.items()}
        return value

    def mask_record(self, value: Any, own: Fields = OWN_FIELDS) -> Any:
        """A decoded record with its strings masked, except waza's own fields (``own``)."""
        if isinstance(value, list):
            return [self.mask_record(v, own) for v in value]
        if not isinstance(value, dict):
            return self.mask_json(value)
        masked = {}
        for key, item in value.items():
            if key not in own:
                masked[key] = self.mask_json(item)
            else:
                inner = own[key]
                masked[key] = item if inner is None else self.mask_record(item, inner)
        return masked

    def __call__(self, data: bytes, *, decode: bool = False) -> bytes:
        """Mask ``data``: JSON lines value by value (records: never waza's own fields), anything else byte by byte.

        ``decode`` forces the JSON route even when no secret is seen in the bytes
        (for JSON written by someone else, who may have escaped a secret's characters).
        """
        self._refresh()
        if not self._needles or not (decode or any(n in data for n in self._needles)):
            return data
        lines = data.split(b"\n")
        try:
            masked = [orjson.dumps(self.mask_record(orjson.loads(line))) if line.strip() else line for line in lines]
        except orjson.JSONDecodeError:
            for needle in self._needles:
                data = data.replace(needle, MASK)
            return data
        return b"\n".join(masked)

    def text(self, value: str) -> str:
        return self.mask_text(value)


class StreamMasker:
    """Masks secrets in a stream of text chunks written one by one (an agent's streamed message), a secret split
    across chunks included: each chunk is handed back masked once no later chunk can complete a secret in it.

    Chunks are held back while the stream's end could be the start of a secret (at most the longest secret's
    length of text, so memory stays flat); a secret's first chunk gets the mask, its other chunks lose their part
    of it, so the chunks joined read ``[REDACTED]``. :meth:`drain` hands back what is held when the stream ends.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redact = redactor
        #: Held chunks, unmasked; a NUL (in no secret: environment values cannot hold one) marks a character
        #: already masked in a chunk handed back before.
        self._held: list[str] = []

    def push(self, text: str) -> list[str]:
        """Add a chunk; the masked chunks that can be written now, oldest first (maybe none, maybe several)."""
        self._held.append(text)
        joined = "".join(self._held)
        secrets = self._redact.texts()
        spans = _spans(joined, secrets)
        hold = len(joined) - _open_prefix(joined, secrets)
        out: list[str] = []
        start = 0
        while self._held and start + len(self._held[0]) <= hold:
            chunk = self._held.pop(0)
            out.append(_masked(chunk, start, spans))
            start += len(chunk)
        if out and self._held:  # a secret handed back in part: its rest in the held chunk is masked already
            ends = [end for begin, end in spans if begin < start < end]
            if ends:
                covered = max(ends) - start
                self._held[0] = "\0" * covered + self._held[0][covered:]
        return out

    def drain(self) -> list[str]:
        """The held chunks, masked (the stream ended: what they hold can no longer become a secret)."""
        joined = "".join(self._held)
        spans = _spans(joined, self._redact.texts())
        out, start = [], 0
        for chunk in self._held:
            out.append(_masked(chunk, start, spans))
            start += len(chunk)
        self._held = []
        return out


class _Held:
    """A JSON value waiting for the masked text of its strings (``missing`` of them not back yet)."""

    __slots__ = ("box", "missing")

    def __init__(self, box: list[Any], missing: int) -> None:
        self.box, self.missing = box, missing


#: Streams of one :class:`ValueStreamMasker` (the strings of further places share one), and values it holds
#: at most: past that, everything held is handed back masked as it stands (memory stays flat).
_MOST_STREAMS, _MOST_HELD = 256, 1024


class ValueStreamMasker:
    """Masks secrets split across consecutive JSON values (a headless CLI's event lines, whose text deltas
    cut a key anywhere). The strings found at the same place of successive values (the same keys, any list
    index) are one stream through a :class:`StreamMasker`, as an ACP message's chunks are: a text delta's
    ``event.delta.text`` of one line continues in the next. :meth:`push` hands back the values that can be
    written now, in order, their strings masked; a value waits while one of its strings is held, and the
    values after it wait with it. :meth:`drain` hands back the rest when the stream ends. What is held is
    bounded (the longest secret per stream, :data:`_MOST_HELD` values), so memory stays flat.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redact = redactor
        self._queue: deque[_Held] = deque()  # values not handed back yet, in order
        self._streams: dict[tuple[str, ...], tuple[StreamMasker, deque[tuple[_Held, Any, Any]]]] = {}

    def push(self, value: Any) -> list[Any]:
        held = _Held([value], 0)
        self._queue.append(held)
        for place, container, key in _strings(held.box):
            if place not in self._streams and len(self._streams) >= _MOST_STREAMS:
                place = ("*",)
            masker, slots = self._streams.setdefault(place, (StreamMasker(self._redact), deque()))
            slots.append((held, container, key))
            held.missing += 1
            self._fill(slots, masker.push(container[key]))
        if len(self._queue) > _MOST_HELD:
            return self.drain()
        return self._ready()

    def drain(self) -> list[Any]:
        for masker, slots in self._streams.values():
            self._fill(slots, masker.drain())
        self._streams.clear()
        return self._ready()

    @staticmethod
    def _fill(slots: deque[tuple[_Held, Any, Any]], texts: list[str]) -> None:
        for text in texts:
            held, container, key = slots.popleft()
            container[key] = text
            held.missing -= 1

    def _ready(self) -> list[Any]:
        out = []
        while self._queue and not self._queue[0].missing:
            out.append(self._queue.popleft().box[0])
        return out


def _strings(box: list[Any]) -> list[tuple[tuple[str, ...], Any, Any]]:
    """The strings of ``box[0]`` as (place, container, key), in document order; a place is the keys on the
    way to the string (``[]`` for any list index). Keys themselves are not searched."""
    found: list[tuple[tuple[str, ...], Any, Any]] = []
    stack: list[tuple[tuple[str, ...], Any, Any]] = [((), box, 0)]
    while stack:
        place, container, key = stack.pop()
        item = container[key]
        if isinstance(item, str):
            found.append((place, container, key))
        elif isinstance(item, dict):
            stack.extend(((*place, str(k)), item, k) for k in reversed(list(item)))
        elif isinstance(item, list):
            stack.extend(((*place, "[]"), item, i) for i in reversed(range(len(item))))
    return found


def _spans(text: str, secrets: list[str]) -> list[tuple[int, int]]:
    """Where the secrets are in ``text``, as merged (start, end) spans."""
    found = []
    for secret in secrets:
        at = text.find(secret)
        while at >= 0:
            found.append((at, at + len(secret)))
            at = text.find(secret, at + 1)
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(found):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((begin, end))
    return merged


def _open_prefix(text: str, secrets: list[str]) -> int:
    """The length of the longest end of ``text`` that a secret starts with (but does not end with)."""
    longest = 0
    for secret in secrets:
        tail = text[-(len(secret) - 1) :] if len(secret) > 1 else ""
        for i in range(len(tail) - longest):
            if secret.startswith(tail[i:]):
                longest = len(tail) - i
                break
    return longest


def _masked(chunk: str, start: int, spans: list[tuple[int, int]]) -> str:
    """``chunk`` (at ``start`` of the joined stream) with the spans' parts in it masked: the mask where a span
    begins, nothing where it goes on; characters already masked (NUL) dropped."""
    end = start + len(chunk)
    out, at = [], start
    for begin, stop in spans:
        if stop <= start or begin >= end:
            continue
        out.append(chunk[at - start : max(begin, start) - start])
        if begin >= start:
            out.append(_MASK_TEXT)
        at = min(stop, end)
    out.append(chunk[at - start :])
    return "".join(out).replace("\0", "")
