"""The judge client shared by the LLM graders: one chat exchange with a model, or an error.

Two ways to reach a judge, chosen by the grader's config:

* ``base_url`` (+ ``model``, ``api_key_env``): any OpenAI-compatible
  ``/chat/completions`` endpoint. The reply is constrained with
  ``response_format: json_schema`` when ``structured`` is on (the default); an
  endpoint that rejects that field (HTTP 400/422 naming it) is asked again
  without it, and the reply is then parsed strictly.
* ``command``: any program; the whole prompt goes to its stdin, its stdout is
  the reply (so a local CLI, or a script wrapping one, can judge).

A judge that cannot be reached, answers an HTTP error, or exits non-zero raises
:class:`JudgeError`; the runner turns that into an *error* grade. There is no
fallback score: a grade nobody judged must never look like a verdict.

Transient failures (connection errors, timeouts, 408, 409, 429, 5xx) are
retried ``retries`` times under the policy the http adapter uses too
(``waza.protocol.io.chat_http``: exponential backoff, Retry-After honoured),
over one pooled connection per run. The API key is read from the
environment at call time and only ever put in the Authorization header.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from waza.protocol.io import model_cache
from waza.protocol.io.chat_http import RETRYABLE_STATUS, ChatFailed, RetryPolicy, Transient, pooled_client, with_retries
from waza.protocol.io.process import run_once

if TYPE_CHECKING:  # only its types: chat_http imports httpx at the first request
    import httpx


class JudgeError(RuntimeError):
    """The judge could not give a usable answer; the message says why (no score is made up)."""


class JudgeSettings(msgspec.Struct):
    """Where the judge is and how to call it, read from a grader's config."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    command: list[str] | None = None
    structured: bool = True
    temperature: float = 0.0
    max_tokens: int = 512
    timeout: float = 60.0
    retries: int = 2
    retry_backoff: float = 0.5
    #: What the model cache knows the endpoint by instead of its URL (a local judge: the model, not the port).
    cache_as: str | None = None

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> JudgeSettings:
        command = config.get("command")
        if isinstance(command, str):
            command = shlex.split(command)
        settings = cls(
            base_url=config.get("base_url"),
            model=config.get("model"),
            api_key_env=config.get("api_key_env"),
            command=command or None,
            structured=config.get("structured", True),
            temperature=config.get("temperature", 0.0),
            max_tokens=config.get("max_tokens", 512),
            timeout=config.get("judge_timeout", 60.0),
            retries=config.get("retries", 2),
            retry_backoff=config.get("retry_backoff", 0.5),
            cache_as=config.get("cache_as"),
        )
        if settings.base_url is None and settings.command is None:
            if config.get("judge") == "local":
                raise JudgeError(
                    "judge 'local' is started by the waza runner (waza capture/grade --judge local); "
                    "a grader run on its own needs base_url or command"
                )
            raise JudgeError(
                "no judge configured: give base_url (an OpenAI-compatible endpoint) or command "
                "(on the waza command line: --judge-base-url, --judge-command or --judge local)"
            )
        return settings

    def describe(self) -> str:
        return self.base_url if self.base_url else " ".join(self.command or [])


class JudgeReply(msgspec.Struct):
    """What the judge said and what it cost; all of it goes into the grade's details."""

    text: str
    latency_ms: float
    attempts: int
    structured: bool
    usage: dict[str, Any] = msgspec.field(default_factory=dict)
    model: str | None = None
    finish_reason: str | None = None
    #: "hit" (answered from the model cache), "miss" (asked, then kept) or "off" (--no-cache / cache: false).
    cache: str = "off"

    def cached(self) -> dict[str, Any]:
        """What the model cache keeps of this reply (no timing: a hit costs nothing)."""
        return {
            "text": self.text,
            "structured": self.structured,
            "usage": self.usage,
            "model": self.model,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_cache(cls, value: dict[str, Any]) -> JudgeReply | None:
        if not isinstance(value.get("text"), str):
            return None
        usage = value.get("usage")
        return cls(
            text=value["text"],
            latency_ms=0.0,
            attempts=0,
            structured=bool(value.get("structured")),
            usage=usage if isinstance(usage, dict) else {},
            model=value.get("model") if isinstance(value.get("model"), str) else None,
            finish_reason=value.get("finish_reason") if isinstance(value.get("finish_reason"), str) else None,
            cache="hit",
        )

    def details(self, messages: list[dict[str, str]], settings: JudgeSettings) -> dict[str, Any]:
        return {
            "judge": settings.describe(),
            "model": self.model or settings.model,
            "prompt": messages,
            "reply": self.text,
            "latencyMs": round(self.latency_ms, 1),
            "usage": self.usage,
            "attempts": self.attempts,
            "structured": self.structured,
            "finishReason": self.finish_reason,
            "cache": self.cache,
        }


def prompt_text(messages: list[dict[str, str]]) -> str:
    """The chat as one text, for a judge command (which reads a plain prompt on stdin)."""
    return "\n\n".join(m["content"] for m in messages) + "\n"


def cache_key(settings: JudgeSettings, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> dict[str, Any]:
    """Everything that decides a judge's answer: the command, the programs it runs and its stdin, or the
    endpoint (``cache_as`` in its place for a server waza starts on a new port each run) and the body."""
    if settings.command is not None:
        return {
            "judge": "command",
            "command": settings.command,
            "programs": programs(settings.command),
            "stdin": prompt_text(messages),
        }
    return {
        "judge": "endpoint",
        "url": settings.cache_as or (settings.base_url or "").rstrip("/") + "/chat/completions",
        "body": _body(settings, messages, schema if settings.structured else None),
    }


def programs(command: list[str]) -> list[str | None]:
    """What a judge command runs, by content: the executable found on PATH as the command would find it,
    then every argument that names a file (the script of ``python3 ./judge.py``), each by its real path
    and the hash of its bytes. Two projects' ``./judge.py`` differ, and so does a script edited in place."""
    executable = shutil.which(command[0]) if command else None
    found = [model_cache.file_identity(executable) if executable else None]
    found.extend(model_cache.file_identity(arg) for arg in command[1:] if os.path.isfile(arg))
    return found


async def ask(settings: JudgeSettings, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> JudgeReply:
    """One judge exchange: ``schema`` constrains the reply where the endpoint supports it."""
    if settings.command is not None:
        return await _ask_command(settings, messages)
    return await _ask_http(settings, messages, schema if settings.structured else None)


async def _ask_command(settings: JudgeSettings, messages: list[dict[str, str]]) -> JudgeReply:
    started = time.perf_counter()
    assert settings.command is not None
    try:
        out = await run_once(settings.command, stdin=prompt_text(messages).encode(), timeout=settings.timeout)
    except OSError as exc:
        raise JudgeError(f"cannot start judge command {settings.command[0]!r}: {exc.strerror or exc}") from None
    if out.timed_out:
        raise JudgeError(f"judge command timed out after {settings.timeout:g}s")
    if out.returncode != 0:
        tail = out.stderr_tail.strip().splitlines()[-1:] or [""]
        raise JudgeError(f"judge command exited with {out.returncode}: {tail[0]}".rstrip(": "))
    text = out.stdout.decode("utf-8", "replace")
    return JudgeReply(text=text, latency_ms=(time.perf_counter() - started) * 1000, attempts=1, structured=False)


def _headers(settings: JudgeSettings) -> dict[str, str]:
    headers = {"content-type": "application/json"}
    if settings.api_key_env:
        key = os.environ.get(settings.api_key_env)
        if not key:
            raise JudgeError(f"environment variable {settings.api_key_env} (api_key_env) is not set")
        headers["authorization"] = f"Bearer {key}"
    return headers


def _body(settings: JudgeSettings, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "messages": messages,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    }
    if settings.model:
        body["model"] = settings.model
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": schema},
        }
    return body


def _rejects_schema(response: httpx.Response) -> bool:
    """An endpoint saying it does not do structured output (so we ask again without it)."""
    body = response.content
    return response.status_code in (400, 422) and (b"response_format" in body or b"json_schema" in body)


async def _ask_http(settings: JudgeSettings, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> JudgeReply:
    assert settings.base_url is not None
    url = settings.base_url.rstrip("/") + "/chat/completions"
    headers = _headers(settings)
    started = time.perf_counter()
    policy = RetryPolicy(attempts=settings.retries + 1, backoff=settings.retry_backoff)
    client = pooled_client()
    asked = {"schema": schema}

    async def attempt(timeout: float) -> httpx.Response:
        while True:
            body = orjson.dumps(_body(settings, messages, asked["schema"]))
            response = await client.post(url, content=body, headers=headers, timeout=min(timeout, settings.timeout))
            if response.status_code == 200:
                return response
            if asked["schema"] is not None and _rejects_schema(response):
                asked["schema"] = None
                continue
            what = f"judge endpoint answered HTTP {response.status_code}: {_error_text(response)}"
            if response.status_code in RETRYABLE_STATUS or response.status_code >= 500:
                raise Transient(what, response.headers.get("retry-after"))
            raise ChatFailed(what)

    try:
        response, attempts = await with_retries(attempt, policy, what=f"judge endpoint {settings.base_url}")
    except ChatFailed as exc:
        raise JudgeError(str(exc)) from None
    return _reply(response, started, attempts, asked["schema"] is not None)


def _error_text(response: httpx.Response) -> str:
    try:
        value = orjson.loads(response.content)
        message = value.get("error", {}).get("message") if isinstance(value, dict) else None
    except (orjson.JSONDecodeError, AttributeError):
        message = None
    text = message or response.content[:200].decode("utf-8", "replace")
    return " ".join(str(text).split())


def _reply(response: httpx.Response, started: float, attempts: int, structured: bool) -> JudgeReply:
    try:
        value = orjson.loads(response.content)
        choice = value["choices"][0]
        text = choice["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        preview = response.content[:120].decode("utf-8", "replace")
        raise JudgeError(f"judge endpoint answered something that is not a chat completion: {preview!r}") from None
    if not isinstance(text, str):
        raise JudgeError("judge reply has no text content")
    usage = value.get("usage") if isinstance(value.get("usage"), dict) else {}
    return JudgeReply(
        text=text,
        latency_ms=(time.perf_counter() - started) * 1000,
        attempts=attempts,
        structured=structured,
        usage=usage,
        model=value.get("model"),
        finish_reason=choice.get("finish_reason"),
    )
