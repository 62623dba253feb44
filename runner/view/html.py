"""The frame every page shares, and the small pieces pages are made of.

All values from files go through :func:`e` (the report's escaper) and URLs are
built with :func:`href` from fixed paths and url-encoded parameters, so no
value from a file can become markup, a script or a ``javascript:`` link. The
pages carry no inline script or style: the Content-Security-Policy set by
:mod:`.server` allows only waza's own ``/static`` files.
"""

from __future__ import annotations

import datetime
from urllib.parse import urlencode

from waza.runner.analysis.markdown import num
from waza.runner.reports.report_html import badge, e

__all__ = ["badge", "e", "href", "link", "num", "page", "secs", "table", "when"]

NAV = (("/", "Runs"), ("/compare", "Compare"), ("/calibration", "Calibration"))


def href(path: str, **params: object) -> str:
    """A same-origin URL: a fixed path and url-encoded parameters (None ones left out), HTML-escaped."""
    query = urlencode({k: str(v) for k, v in params.items() if v is not None and v != ""})
    return e(f"{path}?{query}" if query else path)


def link(text: object, path: str, **params: object) -> str:
    return f'<a href="{href(path, **params)}">{e(text)}</a>'


def secs(ms: float | None) -> str:
    if ms is None:
        return ""
    if ms >= 120_000:
        return f"{ms / 60000:.1f} min"
    return f"{ms / 1000:.2f} s"


def when(epoch_ms: float | None) -> str:
    if epoch_ms is None:
        return ""
    return datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def table(head: list[str], rows: list[str], cls: str = "", body_id: str = "") -> str:
    """``head`` are trusted header cells (already markup); ``rows`` are ``<tr>`` markup."""
    ident = f' id="{e(body_id)}"' if body_id else ""
    return (
        f'<table class="{e(cls)}"><thead><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr></thead>'
        f"<tbody{ident}>{''.join(rows)}</tbody></table>"
    )


def page(title: str, body: str, *, active: str = "/", refresh: int | None = None) -> str:
    """The frame around ``body``; ``refresh`` reloads the page after that many seconds (a plain meta refresh, no script)."""
    again = f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else ""
    nav = "".join(f'<a class="{"on" if path == active else ""}" href="{path}">{name}</a>' for path, name in NAV)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'{again}<title>{e(title)} · waza view</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/static/view.css">'
        '<script src="/static/view.js" defer></script></head><body>'
        f'<header><span class="brand">waza view</span><nav>{nav}</nav></header>'
        f"<main>{body}</main></body></html>\n"
    )
