"""The model server's web app: each API family's routes over one backend (a reply script or the local model).

Routes: Anthropic ``/v1/messages`` (and ``/count_tokens``), OpenAI
``/v1/chat/completions`` and ``/v1/responses``, Gemini
``/v1beta/models/MODEL:generateContent`` / ``:streamGenerateContent`` /
``:countTokens``, and ``/v1/models``. A request with ``stream`` (Gemini: the
stream route) gets server-sent events, any other a JSON body. API keys are
accepted and ignored: the server listens on loopback only, and
:class:`~.guard.Guard` refuses requests from web pages and foreign hosts.

A body that is not a JSON object, or whose fields have the wrong shapes, gets
a 400 saying so; an unknown route or method a JSON 404 or 405.

A request the backend cannot answer (the script has no reply left) gets an
HTTP 400 in the family's error shape: a client retries a 5xx, and a script
that ran out should fail the agent's turn at once, not after its retries.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import anthropic, gemini, openai
from .guard import MAX_BODY, Guard, api_of, error_body
from .replies import TITLE, TITLE_MODEL, Reply, Request, estimate_tokens

__all__ = ["Backend", "build_app"]

#: The model name listed at /v1/models; any name is accepted in requests.
MODEL_ID = "waza-serve-model"


class Backend(Protocol):
    async def answer(self, request: Request) -> Reply: ...


def _error(api: str, status: int, message: str) -> Response:
    return Response(error_body(api, status, message), status_code=status, media_type="application/json")


async def _http_error(http: HttpRequest, exc: Exception) -> Response:
    """Starlette's own refusals (404, 405, 413) and any fault (500, logged by the Guard) as JSON errors."""
    if isinstance(exc, HTTPException):
        return _error(api_of(http.url.path), exc.status_code, f"{exc.detail}: {http.method} {http.url.path}")
    return _error(api_of(http.url.path), 500, f"internal error ({type(exc).__name__})")


#: What reading a request's fields raises when a client sent them in the wrong shapes.
MALFORMED = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def build_app(
    backend: Backend, *, log: Callable[[str], None] | None = None, lifespan: Any = None, allowed_hosts: tuple[str, ...] = ()
) -> Guard:
    """The app answering every family from ``backend``; ``log`` gets one line per model request.

    ``allowed_hosts``: Host names answered besides loopback's (see :mod:`.guard`)."""

    async def body_of(http: HttpRequest) -> dict[str, Any] | None:
        data = bytearray()
        async for chunk in http.stream():
            data += chunk
            if len(data) > MAX_BODY:
                raise HTTPException(413, f"the request body is over {MAX_BODY >> 20} MiB")
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    async def reply(
        http: HttpRequest,
        api: str,
        read: Callable[[dict[str, Any]], Request],
        render: Callable[[Request, Reply], dict[str, Any]],
        stream: Callable[[Request, Reply], Iterator[bytes]],
    ) -> Response:
        body = await body_of(http)
        if body is None:
            return _error(api, 400, "the request body is not a JSON object")
        try:
            request = read(body)
        except MALFORMED as exc:
            return _error(api, 400, f"the request's fields do not have the {api} API's shapes ({type(exc).__name__})")
        try:
            answer = Reply(TITLE) if request.model == TITLE_MODEL else await backend.answer(request)
        except LookupError as exc:
            if log:
                log(f"{api}: {exc.args[0]}")
            return _error(api, 400, str(exc.args[0]))
        if log:
            calls = ", ".join(c.name for c in answer.tool_calls)
            log(f"{api}{' stream' if request.stream else ''}: {answer.text[:60]!r}{f' tools: {calls}' if calls else ''}")
        if request.stream:
            return StreamingResponse(_chunks(stream(request, answer)), media_type="text/event-stream")
        return Response(orjson.dumps(render(request, answer)), media_type="application/json")

    async def messages(http: HttpRequest) -> Response:
        return await reply(http, "anthropic", anthropic.read_request, anthropic.render, anthropic.render_stream)

    async def count_tokens(http: HttpRequest) -> Response:
        body = await body_of(http) or {}
        try:
            return JSONResponse({"input_tokens": estimate_tokens(anthropic.read_request(body).chars)})
        except MALFORMED as exc:
            return _error("anthropic", 400, f"the request's fields do not have the anthropic API's shapes ({type(exc).__name__})")

    async def chat(http: HttpRequest) -> Response:
        return await reply(http, "openai-chat", openai.read_chat, openai.render_chat, openai.render_chat_stream)

    async def responses(http: HttpRequest) -> Response:
        return await reply(
            http, "openai-responses", openai.read_responses, openai.render_responses, openai.render_responses_stream
        )

    async def google(http: HttpRequest) -> Response:
        model, _, method = str(http.path_params["call"]).partition(":")
        if method == "countTokens":
            body = await body_of(http) or {}
            try:
                return JSONResponse({"totalTokens": estimate_tokens(gemini.read_request(model, body, False).chars)})
            except MALFORMED as exc:
                return _error("gemini", 400, f"the request's fields do not have the gemini API's shapes ({type(exc).__name__})")
        if method not in ("generateContent", "streamGenerateContent"):
            return _error("gemini", 404, f"no method {method!r} here (generateContent, streamGenerateContent, countTokens)")
        streamed = method == "streamGenerateContent"
        return await reply(http, "gemini", lambda b: gemini.read_request(model, b, streamed), gemini.render, gemini.render_stream)

    async def models(http: HttpRequest) -> Response:
        entry = {"id": MODEL_ID, "object": "model", "type": "model", "display_name": MODEL_ID, "owned_by": "waza", "created": 0}
        return JSONResponse({"object": "list", "data": [entry], "has_more": False, "first_id": MODEL_ID, "last_id": MODEL_ID})

    routes = [
        Route("/v1/messages", messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/responses", responses, methods=["POST"]),
        Route("/v1beta/models/{call:path}", google, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_error, Exception: _http_error})
    return Guard(app, allowed_hosts=allowed_hosts, log=log)


async def _chunks(events: Iterator[bytes]) -> AsyncIterator[bytes]:
    for event in events:
        yield event


def stderr_log(line: str) -> None:
    print(f"serve-model: {line}", file=sys.stderr, flush=True)
