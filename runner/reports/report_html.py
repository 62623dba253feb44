"""The single-file HTML report: a summary table and, per prompt, a collapsible trajectory viewer.

The file must open from disk, offline, years later, and must be safe to open
although it shows text an agent wrote. So: one file with inline CSS and a
little inline JavaScript, no fetches (a Content-Security-Policy forbids any),
and every value from a result passed through :func:`html.escape` before it
touches the markup; values are never put inside the script.
"""

from __future__ import annotations

import shutil
from html import escape
from typing import IO, Any

import orjson

from waza.protocol.records import Grade, TrajectoryStep
from waza.runner.analysis.attempts import Attempt
from waza.runner.analysis.markdown import num
from waza.runner.reports.report_formats import Entry, Row, Totals
from waza.runner.wording import count

STATUSES = ("passed", "failed", "flaky", "error", "pending", "ungraded")


def e(value: object) -> str:
    """Escaped text (``None`` as an empty string)."""
    return "" if value is None else escape(str(value), quote=True)


def pretty(value: Any) -> str:
    """A JSON value as indented, escaped text for a <pre>."""
    if isinstance(value, str):
        return e(value)
    return e(orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode())


def badge(status: str) -> str:
    return f'<span class="badge s-{e(status)}">{e(status)}</span>'


def _secs(ms: int | None) -> str:
    return "" if ms is None else f"{ms / 1000:.2f}s"


def _block(label: str, value: Any) -> str:
    if value is None or value == [] or value == {}:
        return ""
    return f'<div class="io"><div class="label">{e(label)}</div><pre>{pretty(value)}</pre></div>'


def step_html(step: TrajectoryStep) -> str:
    """One step of the trajectory viewer; its kind decides what is shown."""
    meta = f"+{step.timestamp / 1000:.2f}s"
    if step.turn is not None:
        meta += f" · turn {step.turn}"
    kind = step.type
    if kind in ("message", "thought"):
        who = f"{step.role} message" if kind == "message" else "thought"
        role = f" role-{e(step.role)}" if step.role else ""
        return (
            f'<li class="step {kind}{role}"><div class="meta">{e(meta)} · {e(who)}</div>'
            f'<div class="text">{e(step.content)}</div></li>'
        )
    if kind == "tool_call":
        took = f" · {step.duration} ms" if step.duration is not None else ""
        kind_label = f" ({e(step.kind)})" if step.kind else ""
        title = f' <span class="title">{e(step.title)}</span>' if step.title and step.title != step.name else ""
        return (
            f'<li class="step tool_call"><div class="meta">{e(meta)}{e(took)} · tool call</div>'
            f'<div class="tool"><span class="name">{e(step.name or "(unnamed)")}</span>{kind_label}{title} '
            f"{badge(step.status or 'pending')}</div>"
            f"{_block('input', step.input)}{_block('output', step.output)}{_block('content', step.tool_content)}"
            f"{_block('locations', step.locations)}</li>"
        )
    if kind == "plan":
        items = "".join(_plan_entry(entry) for entry in step.entries or [])
        return f'<li class="step plan"><div class="meta">{e(meta)} · plan</div><ol class="entries">{items}</ol></li>'
    label = "permission" if kind == "permission" else f"event {step.name or ''}".strip()
    return f'<li class="step {e(kind)}"><div class="meta">{e(meta)} · {e(label)}</div>{_block("detail", step.extra)}</li>'


def _plan_entry(entry: Any) -> str:
    if not isinstance(entry, dict):
        return f"<li>{pretty(entry)}</li>"
    status = entry.get("status")
    priority = entry.get("priority")
    tags = "".join(f' <span class="tag">{e(t)}</span>' for t in (status, priority) if t)
    return f"<li>{e(entry.get('content', ''))}{tags}</li>"


def grades_html(grades: list[Grade]) -> str:
    if not grades:
        return '<p class="muted">No grades.</p>'
    rows = []
    for g in grades:
        why = g.error if g.status == "error" else g.reasoning
        details = f"<details><summary>details</summary><pre>{pretty(g.details)}</pre></details>" if g.details else ""
        rows.append(
            f"<tr><td>{e(g.name)}</td><td>{badge(g.status)}</td><td>{num(g.score) if g.score is not None else ''}</td>"
            f'<td>{g.weight:g}</td><td class="why">{e(why)}{details}</td></tr>'
        )
    return (
        '<table class="grades"><thead><tr><th>grader</th><th>status</th><th>score</th><th>weight</th>'
        f"<th>reasoning</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def agent_failed(a: Attempt) -> bool:
    """The agent itself failed (not a grader): whatever its graders said was said of an output that never came."""
    return a.status == "error" and bool(a.errors)


def score_html(a: Attempt) -> str:
    return "no verdict (the agent errored)" if agent_failed(a) else f"score {num(a.score)}"


def verdicts_html(a: Attempt) -> str:
    """The grades, or for an agent that failed, the grades kept aside: they judged an empty output, not the agent."""
    if not agent_failed(a) or not a.grades:
        return grades_html(a.grades)
    return (
        '<p class="muted void">Not a verdict: the agent errored, so its graders judged an output that never came.</p>'
        f'<details class="void"><summary>grades given anyway ({len(a.grades)})</summary>{grades_html(a.grades)}</details>'
    )


def stderr_html(a: Attempt) -> str:
    """The agent's own last words on stderr (a traceback, a missing key): often the why of an error."""
    if not a.stderr:
        return ""
    return f'<h4>Agent stderr</h4><pre class="stderr">{e(a.stderr)}</pre>'


def attempt_html(a: Attempt) -> str:
    """Input, output, errors, the agent's stderr, grades and the trajectory of one attempt."""
    turns = "".join(f"<li><pre>{e(t)}</pre></li>" for t in a.turns)
    errors = "".join(f'<p class="error">{e(err)}</p>' for err in a.errors)
    usage = ""
    if a.usage and (a.usage.input_tokens is not None or a.usage.output_tokens is not None):
        usage = f" · tokens {e(a.usage.input_tokens)} in / {e(a.usage.output_tokens)} out"
    exit_ = ""
    if a.exit is not None:
        parts = [f"{k} {v}" for k, v in a.exit.to_dict().items() if v not in (None, False)]
        exit_ = f" · exit: {e(', '.join(parts))}" if parts else ""
    steps = "".join(step_html(s) for s in a.trajectory)
    return (
        f'<div class="facts">{badge(a.status)} {score_html(a)} · {e(_secs(a.duration) or "n/a")}{usage}{exit_}</div>'
        f"{errors}{stderr_html(a)}"
        f'<h4>Input</h4><ol class="turns">{turns}</ol>'
        f'<h4>Output</h4><pre class="output">{e(a.output)}</pre>'
        f"<h4>Grades</h4>{verdicts_html(a)}"
        f'<h4>Trajectory ({count(len(a.trajectory), "step")})</h4><ol class="trajectory">{steps}</ol>'
    )


def entry_html(entry: Entry) -> str:
    """A prompt's collapsible section; for trials one nested section per trial, the first one open."""
    head = (
        f'<summary><span class="num">{entry.number}</span> <span class="pid">{e(entry.id)}</span> {badge(entry.status)}'
        f' <span class="muted">{score_html(entry.attempts[0]) if entry.trials is None else f"score {num(entry.score)}"}'
        + (f" · {e(entry.trials)} trials passed" if entry.trials else "")
        + "</span></summary>"
    )
    if entry.trials is None:
        inner = attempt_html(entry.attempts[0])
    else:
        inner = "".join(
            f'<details class="trial"{" open" if i == 0 else ""}><summary>trial {e(a.trial)} {badge(a.status)}</summary>'
            f"{attempt_html(a)}</details>"
            for i, a in enumerate(entry.attempts)
        )
    return (
        f'<details class="prompt" id="p{entry.number}" data-status="{e(entry.status)}" data-id="{e(entry.id)}">'
        f'{head}<div class="body">{inner}</div></details>\n'
    )


CSS = """
:root{--fg:#1d2330;--muted:#6b7280;--line:#d9dde5;--bg:#fff;--soft:#f5f7fa}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1200px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h4{margin:14px 0 6px;font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.muted{color:var(--muted)}table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}tr[hidden],details[hidden]{display:none}
.badge{display:inline-block;border-radius:9px;padding:0 8px;font-size:12px;font-weight:600;background:#e5e7eb}
.s-passed,.s-completed{background:#d1fae5;color:#065f46}.s-failed{background:#fee2e2;color:#991b1b}.s-flaky{background:#fef3c7;color:#92400e}
.s-error{background:#fde68a;color:#7c2d12}.s-pending,.s-in_progress{background:#e0e7ff;color:#3730a3}
.controls{margin:12px 0;display:flex;gap:6px;flex-wrap:wrap}button{border:1px solid var(--line);background:var(--soft);border-radius:6px;padding:3px 10px;cursor:pointer}
button.on{background:var(--fg);color:#fff}
details.prompt{border:1px solid var(--line);border-radius:8px;margin:8px 0;background:var(--bg)}
details.prompt>summary{cursor:pointer;padding:8px 12px;list-style-position:inside}details.prompt>.body{padding:0 14px 12px}
details.trial{border-left:3px solid var(--line);margin:8px 0;padding-left:10px}details.trial>summary{cursor:pointer}
.num{color:var(--muted);font-variant-numeric:tabular-nums}.pid{font-weight:600}
pre{background:var(--soft);padding:6px 8px;border-radius:6px;white-space:pre-wrap;word-break:break-word;max-height:360px;overflow:auto;margin:2px 0}
ol.trajectory{list-style:none;padding:0;margin:0}.step{border-left:3px solid var(--line);padding:4px 10px;margin:6px 0}
.step .meta{font-size:12px;color:var(--muted)}.step .text{white-space:pre-wrap;word-break:break-word}
.step.thought{border-color:#a5b4fc}.step.thought .text{font-style:italic;color:#4b5563}
.step.message.role-user{border-color:#93c5fd}.step.message.role-agent{border-color:#34d399}
.step.tool_call{border-color:#fbbf24}.tool .name{font-family:ui-monospace,monospace;font-weight:600}
.step.plan{border-color:#c084fc}.tag{font-size:11px;color:var(--muted);border:1px solid var(--line);border-radius:6px;padding:0 4px}
.io .label{font-size:11px;color:var(--muted)}.error{color:#991b1b;font-weight:600}.why{white-space:pre-wrap}
td a{color:inherit}.why-line{font-size:12px;color:#7c2d12;word-break:break-word;max-width:60ch}
pre.stderr{background:#fff7ed;border-left:3px solid #d97706}.void{font-style:italic}
input[type=search]{border:1px solid var(--line);border-radius:6px;padding:3px 8px;font:inherit;min-width:0}
"""

JS = """
(function(){
  var want='all', query='';
  function show(id){var d=document.getElementById(id);if(d){d.open=true;d.scrollIntoView({block:'start'});}}
  function apply(){
    document.querySelectorAll('details.prompt').forEach(function(d){
      var ok=(want==='all'||d.getAttribute('data-status')===want)&&(!query||d.textContent.toLowerCase().indexOf(query)>=0);
      d.hidden=!ok;
      var row=document.querySelector('tr[data-for="'+d.id+'"]');if(row){row.hidden=!ok;}
    });
    var n=document.querySelectorAll('details.prompt:not([hidden])').length;
    var c=document.getElementById('shown');if(c){c.textContent=n+' shown';}
  }
  document.addEventListener('click',function(ev){
    var link=ev.target.closest('a[data-open]');
    if(link){ev.preventDefault();show(link.getAttribute('data-open'));history.replaceState(null,'','#'+link.getAttribute('data-open'));return;}
    var f=ev.target.closest('button[data-filter]');
    if(f){want=f.getAttribute('data-filter');
      document.querySelectorAll('button[data-filter]').forEach(function(b){b.classList.toggle('on',b===f);});apply();return;}
    var x=ev.target.closest('button[data-expand]');
    if(x){var open=x.getAttribute('data-expand')==='open';document.querySelectorAll('details.prompt').forEach(function(d){d.open=open;});}
  });
  var box=document.getElementById('find');
  if(box){box.addEventListener('input',function(){query=box.value.trim().toLowerCase();apply();});}
  if(location.hash.length>1){show(location.hash.slice(1));}
})();
"""


class HtmlReport:
    """See the module docstring; ``body`` is one prompt's section, ``write`` the page around them.
    Texts are shown whole (pre blocks scroll), so unlike the other formats it takes no width."""

    def body(self, entry: Entry) -> bytes:
        return entry_html(entry).encode()

    def write(self, out: IO[bytes], title: str, rows: list[Row], totals: Totals, bodies: IO[bytes]) -> None:
        trials = any(r.trials is not None for r in rows)
        head_cells = ["#", "id", "status", "score", "time", "tool calls"] + (["passes"] if trials else [])
        body_rows = "".join(
            f'<tr data-for="p{r.number}"><td class="num">{r.number}</td>'
            f'<td><a href="#p{r.number}" data-open="p{r.number}">{e(r.id)}</a></td><td>{badge(r.status)}'
            + (f'<div class="why-line">{e(r.why)}</div>' if r.why else "")
            + f"</td><td>{num(r.score) if r.verdict else ''}</td><td>{e(_secs(r.duration))}</td><td>{r.tool_calls}</td>"
            + (f"<td>{e(r.trials)}</td>" if trials else "")
            + "</tr>"
            for r in rows
        )
        present = [s for s in STATUSES if totals.statuses[s]]
        buttons = '<button data-filter="all" class="on">all</button>' + "".join(
            f'<button data-filter="{s}">{s} ({totals.statuses[s]})</button>' for s in present
        )
        page_head = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
            f'<h1>{e(title)}</h1><p class="muted">{e(totals.describe())}</p>'
            f'<div class="controls">{buttons}<span style="flex:1"></span>'
            '<input type="search" id="find" placeholder="search ids, outputs, errors, agent stderr">'
            '<span class="muted" id="shown"></span>'
            '<button data-expand="open">expand all</button><button data-expand="close">collapse all</button></div>'
            f'<table class="summary"><thead><tr>{"".join(f"<th>{h}</th>" for h in head_cells)}</tr></thead>'
            f"<tbody>{body_rows}</tbody></table><h2>Prompts</h2>\n"
        )
        out.write(page_head.encode())
        shutil.copyfileobj(bodies, out)
        out.write(f"<script>{JS}</script></body></html>\n".encode())
