"""The http adapter: the model behind an OpenAI-compatible chat-completions endpoint is the agent.

Each prompt is one conversation: ``--system-prompt`` first, then every user
turn and the model's reply to it, so turn N sees turns 0..N-1. The API key is
read from the environment variable named by ``--api-key-env`` (default
``OPENAI_API_KEY``) and goes only into the Authorization header: never into a
record, a log line or an error message. Requests go through the client the LLM
judges use (``waza.protocol.io.chat_http``): 408, 409, 429 and 5xx answers (and
connection failures) are retried with exponential backoff, honouring
``Retry-After``; every request is limited to the time left of the prompt's timeout.

With ``--cache`` a reply is kept in the model cache (``waza.protocol.io.model_cache``),
keyed by the URL, the request body and the trial number (so each of k trials
gets its own answer) and replayed into the trajectory on the next run.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from typing import Any, ClassVar

import anyio
import httpx
import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io import model_cache
from waza.protocol.io.chat_http import ChatFailed, RetryPolicy, check_status, excerpt, pooled_client, with_retries
from waza.protocol.records import Exit, Usage
from waza.protocol.trajectory import MessageChunk, ThoughtChunk, TrajectoryBuilder, UsageUpdate

from .base import Adapter, AgentRun, AgentTask, Confine
from .specs import HttpAgent

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
POLICY = RetryPolicy()

#: OpenAI finish_reason -> our stop reason.
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal", "tool_calls": "end_turn"}


#: A request that cannot succeed (a 4xx, or retries exhausted); the message is safe to record.
RequestFailed = ChatFailed


def usage_of(data: dict[str, Any]) -> Usage | None:
    """Usage from an OpenAI ``usage`` object (prompt/completion tokens and their details)."""
    raw = data.get("usage")
    if not isinstance(raw, dict):
        return None
    details_out = raw.get("completion_tokens_details") or {}
    details_in = raw.get("prompt_tokens_details") or {}

    def number(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return Usage(
        input_tokens=number(raw.get("prompt_tokens")),
        output_tokens=number(raw.get("completion_tokens")),
        total_tokens=number(raw.get("total_tokens")),
        thought_tokens=number(details_out.get("reasoning_tokens")),
        cached_read_tokens=number(details_in.get("cached_tokens")),
    )


class HttpAdapter(Adapter[HttpAgent]):
    name: ClassVar[str] = "http"
    needs_command: ClassVar[bool] = False

    def __init__(self, spec: HttpAgent, *, confine: Confine | None = None) -> None:
        super().__init__(spec, confine=confine)
        self._auth: dict[str, str] = {}
        #: What the model cache knows the endpoint by instead of its URL (a local model: the model, not its port).
        self.cache_as: str | None = None

    @classmethod
    def check(cls, spec: HttpAgent) -> None:
        if spec.local_model:  # the runner starts the server and fills in base_url and model
            if spec.base_url:
                raise ConfigError("HttpAgent.local_model starts its own server; leave HttpAgent.base_url unset")
        elif not spec.base_url:
            raise ConfigError("the http adapter needs HttpAgent.base_url (e.g. http://127.0.0.1:8000/v1)")
        elif not spec.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"not an http(s) URL: {spec.base_url!r}", field="HttpAgent.base_url")
        if not spec.model and not spec.local_model:
            raise ConfigError("the http adapter needs HttpAgent.model")
        if spec.api_key_env is not None and spec.api_key_env not in os.environ:
            raise ConfigError(f"the environment variable {spec.api_key_env!r} is not set", field="HttpAgent.api_key_env")
        if spec.max_tokens is not None and spec.max_tokens < 1:
            raise ConfigError("must be at least 1", field="HttpAgent.max_tokens")

    async def __aenter__(self) -> HttpAdapter:
        key = os.environ.get(self.spec.api_key_env or DEFAULT_KEY_ENV)
        self._auth = {"Authorization": f"Bearer {key}"} if key else {}
        return self

    async def run(self, task: AgentTask) -> AgentRun:
        deadline = math.inf if task.timeout is None else time.monotonic() + task.timeout
        messages: list[dict[str, str]] = []
        if self.spec.system_prompt:
            messages.append({"role": "system", "content": self.spec.system_prompt})
        run = AgentRun()
        turn = 0
        text: str | None = task.case.turns[0]
        while text is not None:
            task.recorder.start_turn(text, turn)
            messages.append({"role": "user", "content": text})
            try:
                with anyio.fail_after(max(0.0, deadline - time.monotonic()) if deadline != math.inf else None):
                    reply, finish = await self._complete(messages, task, deadline)
            except TimeoutError:
                run.exit = Exit(timed_out=True)
                run.errors.append(f"no reply within the {task.timeout:g}s timeout (turn {turn})")
                break
            except RequestFailed as exc:
                run.errors.append(f"turn {turn}: {exc}")
                break
            messages.append({"role": "assistant", "content": reply})
            run.exit = Exit(stop_reason=STOP_REASONS.get(finish or "stop"))  # type: ignore[arg-type]
            turn, text = turn + 1, await task.next_turn(turn)
        return run

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.spec.model, "messages": messages}
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        if self.spec.max_tokens is not None:
            body["max_tokens"] = self.spec.max_tokens
        if self.spec.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def _complete(self, messages: list[dict[str, str]], task: AgentTask, deadline: float) -> tuple[str, str | None]:
        """Send the conversation, with retries (or answer it from the cache); (reply text, finish_reason)."""
        body = self._body(messages)
        key = None
        if self.spec.cache:
            key = model_cache.key_of({"url": self.cache_as or self._url(), "body": body, "trial": task.trial})
            hit = model_cache.load(key)
            usable = hit is not None and isinstance(hit.get("text"), str)
            model_cache.count("agent", hit=usable)
            if hit is not None and usable:
                return _replay(hit, task.recorder)
        kept: dict[str, Any] = {}
        recorder = _Keeping(task.recorder, kept)
        payload = orjson.dumps(body)

        async def attempt(timeout: float) -> tuple[str, str | None]:
            kept.clear()
            if self.spec.stream:
                return await self._streamed(payload, httpx.Timeout(timeout), recorder)
            return await self._whole(payload, httpx.Timeout(timeout), recorder)

        (text, finish), _ = await with_retries(attempt, POLICY, deadline=deadline, what=f"the server at {self._url()}")
        if key is not None:
            model_cache.store(key, {"text": text, "finish": finish, **kept})
        return text, finish

    def _url(self) -> str:
        return (self.spec.base_url or "").rstrip("/") + "/chat/completions"

    async def _whole(self, body: bytes, timeout: httpx.Timeout, recorder: _Keeping) -> tuple[str, str | None]:
        headers = {**_JSON, **self._auth}
        response = await pooled_client().post(self._url(), content=body, headers=headers, timeout=timeout)
        check_status(response)
        try:
            data = orjson.loads(response.content)
            choice = data["choices"][0]
            message = choice["message"]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
            raise RequestFailed(f"not a chat completion: {excerpt(response)}") from None
        mid = data.get("id") if isinstance(data.get("id"), str) else None
        thought = message.get("reasoning_content")
        if isinstance(thought, str) and thought:
            recorder.emit(ThoughtChunk(thought, mid))
        content = message.get("content") or ""
        if not isinstance(content, str):
            raise RequestFailed("the reply's message content is not a string")
        recorder.emit(MessageChunk(content, mid))
        usage = usage_of(data)
        if usage is not None:
            recorder.emit(UsageUpdate(usage))
        return content, choice.get("finish_reason")

    async def _streamed(self, body: bytes, timeout: httpx.Timeout, recorder: _Keeping) -> tuple[str, str | None]:
        parts: list[str] = []
        finish: str | None = None
        headers = {**_JSON, **self._auth, "Accept": "text/event-stream"}
        async with pooled_client().stream("POST", self._url(), content=body, headers=headers, timeout=timeout) as response:
            if response.status_code >= 400:
                await response.aread()
                check_status(response)
            async for line in _lines_once_started(response, parts):
                if not line.startswith("data:"):
                    continue  # SSE comments, event names, keep-alives
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                try:
                    chunk = orjson.loads(payload)
                except orjson.JSONDecodeError:
                    raise RequestFailed(f"a streamed chunk is not JSON: {payload[:200]!r}") from None
                mid = chunk.get("id") if isinstance(chunk.get("id"), str) else None
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if isinstance(delta.get("reasoning_content"), str) and delta["reasoning_content"]:
                        recorder.emit(ThoughtChunk(delta["reasoning_content"], mid))
                    if isinstance(delta.get("content"), str) and delta["content"]:
                        parts.append(delta["content"])
                        recorder.emit(MessageChunk(delta["content"], mid))
                    finish = choice.get("finish_reason") or finish
                usage = usage_of(chunk)
                if usage is not None:
                    recorder.emit(UsageUpdate(usage))
        return "".join(parts), finish


_JSON = {"Content-Type": "application/json"}


async def _lines_once_started(response: httpx.Response, parts: list[str]) -> Any:
    """The stream's lines; a connection lost after text arrived is final (a retry would repeat it)."""
    try:
        async for line in response.aiter_lines():
            yield line
    except httpx.TransportError as exc:
        if parts:
            raise RequestFailed(f"the stream broke after {len(parts)} chunks: {type(exc).__name__}") from None
        raise


class _Keeping:
    """The recorder, also keeping what a reply added (thought, message id, usage) for the cache."""

    def __init__(self, recorder: TrajectoryBuilder, kept: dict[str, Any]) -> None:
        self.recorder = recorder
        self.kept = kept

    def emit(self, event: Any) -> None:
        if isinstance(event, ThoughtChunk):
            self.kept["thought"] = self.kept.get("thought", "") + event.text
        if isinstance(event, (ThoughtChunk, MessageChunk)) and event.message_id:
            self.kept["id"] = event.message_id
        if isinstance(event, UsageUpdate):
            self.kept["usage"] = event.usage.to_dict()
        self.recorder.emit(event)


def _replay(hit: dict[str, Any], recorder: TrajectoryBuilder) -> tuple[str, str | None]:
    """A cached reply told to the trajectory as the server once sent it (whole, not in chunks)."""
    mid = hit.get("id") if isinstance(hit.get("id"), str) else None
    if isinstance(hit.get("thought"), str) and hit["thought"]:
        recorder.emit(ThoughtChunk(hit["thought"], mid))
    recorder.emit(MessageChunk(hit["text"], mid))
    if isinstance(hit.get("usage"), dict):
        # An entry edited by hand: the reply stands, its unreadable usage is left out.
        with contextlib.suppress(ValueError, TypeError):
            recorder.emit(UsageUpdate(Usage.from_dict(hit["usage"])))
    finish = hit.get("finish")
    return hit["text"], finish if isinstance(finish, str) else None
