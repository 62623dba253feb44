"""Routes, security headers and the uvicorn server of ``waza view``.

Read-only by construction: only GET (and HEAD) routes exist, files are only
ever opened for reading, and a page names a file by its key in the registry,
never by a path the browser sends. Every response carries a
Content-Security-Policy that allows nothing but waza's own ``/static`` files
(no inline script, no inline style, no other origin), and a Host check turns
away pages of other sites that rebind their name to the loopback address.
"""

from __future__ import annotations

import socket
import sys
from importlib import resources
from pathlib import Path

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from waza.runner.reports.report_html import CSS as REPORT_CSS
from waza.runner.view.calibration_page import calibration_page
from waza.runner.view.compare_page import compare_page, compare_prompt_page
from waza.runner.view.html import e, page
from waza.runner.view.index import Index, Registry
from waza.runner.view.pages import Query, prompt_page, rows_fragment, run_page, runs_page, runs_rows
from waza.runner.wording import count

__all__ = ["CSP", "build_app", "serve"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Adds :data:`HEADERS` to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def _static(name: str) -> bytes:
    return resources.files("waza.runner.view").joinpath("static", name).read_bytes()


STATIC = {"view.css": "text/css; charset=utf-8", "view.js": "text/javascript; charset=utf-8"}


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def build_app(registry: Registry, roots: list[str], allowed_hosts: list[str]) -> Starlette:
    def not_found(what: str) -> HTMLResponse:
        return HTMLResponse(page("Not found", f"<h1>Not found</h1><p>{e(what)}</p>"), status_code=404)

    def index_of(request: Request, name: str = "f") -> Index | None:
        return registry.get(request.query_params.get(name, ""))

    def home(request: Request) -> Response:
        p = request.query_params
        return HTMLResponse(runs_page(registry, roots, p.get("sort", "file"), p.get("dir") == "desc", p.get("q", "")))

    def api_runs(request: Request) -> Response:
        """The runs list's rows; ``v`` is the signature the page last got: nothing changed, nothing is drawn."""
        p = request.query_params
        version = str(registry.signature())
        if p.get("v") == version:
            return Response(orjson.dumps({"same": True, "v": version}), media_type="application/json")
        rows = runs_rows(registry, p.get("sort", "file"), p.get("dir") == "desc", p.get("q", ""))
        return Response(orjson.dumps({"html": "".join(rows), "v": version}), media_type="application/json")

    def run(request: Request) -> Response:
        index = index_of(request)
        if index is None or index.kind not in ("capture", "trials", "suite"):
            return not_found("No such run: pick one on the Runs page.")
        p = request.query_params
        query = Query(
            index.key, p.get("status", ""), p.get("q", ""), _int(p.get("page"), 1), p.get("sort", ""), p.get("dir") == "desc"
        )
        return HTMLResponse(run_page(index, query))

    def api_rows(request: Request) -> Response:
        index = index_of(request)
        if index is None:
            return Response(b'{"error":"no such run"}', status_code=404, media_type="application/json")
        status = request.query_params.get("status", "")
        html, end = rows_fragment(index, status, max(0, _int(request.query_params.get("from"), 0)))
        body: dict[str, object] = {"html": html, "next": end}
        if html and not status:
            body["status"] = f"{count(end, 'result')} so far"
        return Response(orjson.dumps(body), media_type="application/json")

    def prompt(request: Request) -> Response:
        index = index_of(request)
        i = _int(request.query_params.get("i"), -1)
        if index is None or not 0 <= i < len(index.columns):
            return not_found("No such result.")
        return HTMLResponse(prompt_page(index, i))

    def changed(request: Request, exc: Exception) -> Response:
        """A file read again for a page was replaced, cut, or swapped for a FIFO or a symlink since it was indexed:
        the page says so (the read was refused at once, nothing waited), and the indexer looks at it again."""
        return HTMLResponse(
            page("Changed", f"<h1>The file changed</h1><p>{e(exc)}; it is being indexed again.</p>"), status_code=409
        )

    def compare(request: Request) -> Response:
        p = request.query_params
        return HTMLResponse(compare_page(registry, p.get("a", ""), p.get("b", ""), p.get("show", "")))

    def compare_prompt(request: Request) -> Response:
        p = request.query_params
        html = compare_prompt_page(registry, p.get("a", ""), p.get("b", ""), p.get("id", ""))
        return HTMLResponse(html) if html is not None else not_found("No such prompt in these runs.")

    def calibration(request: Request) -> Response:
        p = request.query_params
        return HTMLResponse(calibration_page(registry, p.get("labels", ""), p.get("results", ""), p.get("report", "")))

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return PlainTextResponse("not found", status_code=404)
        data = _static(name)
        if name == "view.css":
            data = REPORT_CSS.encode() + data
        return Response(data, media_type=STATIC[name])

    routes = [
        Route("/", home),
        Route("/api/runs", api_runs),
        Route("/run", run),
        Route("/api/rows", api_rows),
        Route("/prompt", prompt),
        Route("/compare", compare),
        Route("/compare/prompt", compare_prompt),
        Route("/calibration", calibration),
        Route("/static/{name}", static),
    ]
    middleware = [Middleware(SecurityHeaders), Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)]
    return Starlette(routes=routes, middleware=middleware, exception_handlers={OSError: changed, ValueError: changed})


class Announcing(uvicorn.Server):
    """A uvicorn server that prints its URL once it accepts connections (and handles Ctrl-C), not before."""

    def __init__(self, config: uvicorn.Config, message: str) -> None:
        super().__init__(config)
        self.message = message

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        print(self.message, file=sys.stderr, flush=True)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(roots: list[Path], files: list[Path], host: str, port: int, *, loopback: bool) -> None:
    """Index in the background and serve until interrupted; the URL goes to stderr once listening.

    On loopback only requests naming a loopback host are answered; on another address
    (the user chose to expose the results) any name the machine is reached by is.
    """
    registry = Registry(roots=roots, files=files)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    allowed = ["127.0.0.1", "localhost", "::1", "[::1]", host, shown] if loopback else ["*"]
    app = build_app(registry, [str(p) for p in [*roots, *files]], allowed)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    server = Announcing(config, f"waza: serving {shown}:{bound}, read-only; open http://{shown}:{bound}/ (Ctrl-C stops)")
    registry.start()
    try:
        server.run(sockets=[sock])
    finally:
        registry.stop()
        sock.close()
