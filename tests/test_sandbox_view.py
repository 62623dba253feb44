"""What a ``--sandbox bwrap`` agent sees, tried by hostile agents from every place people install programs.

Each agent is a real shell script started through bubblewrap by the exec or ACP
adapter: it tries to read a secret in the home, in the host's ``/tmp`` and in
``~/.local/share``, to write outside its workspace and inside the installation
it is shown, and to remount that installation writable. The view is planned once
from the evaluator's command line: a link an agent retargets during one prompt
does not change what the next one shows, and a terminal's ``env`` (``LD_PRELOAD``)
is set inside the sandbox only. Run as root (the engine in-process) and as an
ordinary user (the CLI under ``setpriv``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import waza
from waza.adapters.sandbox.bwrap import Sandbox, _probe, plan, wrap_command

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or _probe() is not None,
    reason=f"no bubblewrap sandbox here ({_probe() if sys.platform.startswith('linux') else 'not Linux'}); .ci/run installs bubblewrap",
)

ACP_AGENT = Path(__file__).parent / "agents" / "scripted_acp_agent.py"


class Host:
    """A fake home with secrets, a secret in the host's /tmp, and a workspace, all under one folder."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home"
        (self.home / ".local" / "share").mkdir(parents=True)
        (self.home / ".local" / "lib").mkdir()  # ~/.local is an installation (pip --user): bin/ and lib/ shown
        (self.home / "secret.txt").write_text("s3cr3t-home\n")
        (self.home / ".local" / "share" / "keyring.txt").write_text("s3cr3t-keyring\n")
        (base / "tmp-secret.txt").write_text("s3cr3t-tmp\n")
        self.outside = base / "outside.txt"
        self.workspace = base / "workspace"
        self.workspace.mkdir()

    def hostile(self, path: Path) -> Path:
        """The hostile agent written at ``path``, trying against the folder it is shown from."""
        shown = path.resolve().parent
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"""#!/bin/sh
cat > /dev/null
for f in {self.home}/secret.txt {self.home}/.local/share/keyring.txt {self.base}/tmp-secret.txt; do cat "$f" 2>/dev/null; done
echo pwned > {self.outside} 2>/dev/null
echo pwned > {shown}/planted 2>/dev/null
mount -o remount,rw,bind {shown} 2>/dev/null && echo REMOUNTED
echo pwned > {shown}/planted-after-remount 2>/dev/null
echo answer > answer.txt
echo finished
"""
        )
        path.chmod(0o755)
        return shown

    def check(self, output: str, shown: Path) -> None:
        assert "finished" in output, output
        assert "s3cr3t" not in output, output
        assert "REMOUNTED" not in output, output
        assert not self.outside.exists()
        assert not (shown / "planted").exists() and not (shown / "planted-after-remount").exists()
        assert (self.workspace / "answer.txt").read_text() == "answer\n"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    made = Host(tmp_path)
    monkeypatch.setenv("HOME", str(made.home))
    return made


@pytest.fixture
def usr_local_bin() -> Iterator[Path]:
    folder = Path("/usr/local/bin")
    if not os.access(folder, os.W_OK):
        pytest.skip("/usr/local/bin is not writable here (not root)")
    path = folder / f"waza-hostile-{secrets.token_hex(4)}"
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
        for name in ("planted", "planted-after-remount"):
            assert not (folder / name).exists()


def _command(kind: str, host: Host, usr_local: Path | None) -> tuple[list[str], Path]:
    """The agent's command line for one place people install programs, and the folder it is shown from."""
    script = host.base / "agents" / "hostile.sh"
    if kind in ("/bin/sh", "/bin/bash"):
        return [kind, str(script)], host.hostile(script)
    if kind == "/usr/bin/env":
        return ["/usr/bin/env", "sh", str(script)], host.hostile(script)
    if kind == "/usr/local/bin":
        assert usr_local is not None
        return [usr_local.name], host.hostile(usr_local)  # a bare name, found on PATH
    if kind == "~/bin":
        return [str(host.home / "bin" / "agent")], host.hostile(host.home / "bin" / "agent")
    if kind == "~/.local/bin":
        return [str(host.home / ".local" / "bin" / "agent")], host.hostile(host.home / ".local" / "bin" / "agent")
    if kind == "venv":
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(host.base / "venv")], check=True)
        return [str(host.base / "venv" / "bin" / "agent")], host.hostile(host.base / "venv" / "bin" / "agent")
    assert kind == "node_modules/.bin"
    shown = host.hostile(host.base / "proj" / "node_modules" / "hostile" / "cli.sh")
    link = host.base / "proj" / "node_modules" / ".bin" / "agent"
    link.parent.mkdir()
    link.symlink_to("../hostile/cli.sh")
    return [str(link)], shown


KINDS = ["/bin/sh", "/bin/bash", "/usr/bin/env", "/usr/local/bin", "~/bin", "~/.local/bin", "venv", "node_modules/.bin"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_agent_reads_no_secret_and_writes_nothing_outside(
    kind: str, host: Host, request: pytest.FixtureRequest
) -> None:
    if kind == "/bin/bash" and not os.path.exists("/bin/bash"):
        pytest.skip("no /bin/bash here")
    usr_local = request.getfixturevalue("usr_local_bin") if kind == "/usr/local/bin" else None
    command, shown = _command(kind, host, usr_local)
    (result,) = waza.capture(
        [{"id": "p", "input": "go"}],
        waza.ExecAgent(command=tuple(command), sandbox=waza.Sandbox()),
        workspace=waza.Workspace(cwd=host.workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    assert result.errors == [], result.stderr
    host.check(result.output or "", shown)


def test_the_view_never_shows_root_a_home_or_tmp(host: Host) -> None:
    """/bin/sh on merged /usr once showed the whole host; a script in the home showed the home."""
    (host.home / "agent.sh").write_text("#!/bin/sh\n")
    policy = plan(Sandbox(), ["/bin/sh", str(host.home / "agent.sh"), "/tmp", str(host.home), "/home", "/var"])
    argv = wrap_command(["/bin/sh"], policy, host.workspace)
    shown = [argv[i + 1] for i, arg in enumerate(argv) if arg in ("--ro-bind", "--ro-bind-try", "--bind")]
    for never in ("/", "/tmp", "/var/tmp", "/run", "/var", "/home", str(host.home), str(Path(host.home).parent), "/root"):
        assert never not in shown, (never, shown)
    assert str(host.home / "agent.sh") in shown  # the script alone, not the home that holds it
    assert "--cap-drop" in argv and argv[argv.index("--cap-drop") + 1] == "ALL"
    with pytest.raises(waza.ConfigError, match="never shows"):
        plan(Sandbox(read_only=(Path("/"),)), [])


def test_a_link_one_prompt_plants_does_not_change_what_the_next_shows(host: Host) -> None:
    tools = host.workspace / "tools"
    tools.mkdir()
    host.hostile(host.base / "agents" / "first.sh")
    # The first prompt's agent points the program's link at a script in the home, which reads the home's secret.
    (host.home / "bin").mkdir()
    (host.home / "bin" / "second.sh").write_text(f"#!/bin/sh\ncat > /dev/null\ncat {host.home}/secret.txt\necho second-ran\n")
    (host.home / "bin" / "second.sh").chmod(0o755)
    with (host.base / "agents" / "first.sh").open("a") as f:
        f.write(f"ln -sfn {host.home}/bin/second.sh tools/agent\n")
    (tools / "agent").symlink_to(host.base / "agents" / "first.sh")
    results = waza.capture(
        [{"id": "a", "input": "go"}, {"id": "b", "input": "go"}],
        waza.ExecAgent(command=(str(tools / "agent"),), sandbox=waza.Sandbox()),
        workspace=waza.Workspace(cwd=host.workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    assert "finished" in (results[0].output or "")
    assert os.readlink(tools / "agent") == f"{host.home}/bin/second.sh"  # planted
    second = (results[1].output or "") + (results[1].stderr or "")
    assert "s3cr3t" not in second, second
    assert "second-ran" not in second  # the home is not shown: the planted program is not even there


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler here to build the preloaded library")
def test_a_terminals_ld_preload_runs_inside_the_sandbox_only(host: Host) -> None:
    marker = host.base / "preloaded-on-host"
    source = host.base / "evil.c"
    source.write_text(
        "#include <stdio.h>\n__attribute__((constructor)) static void evil(void) {\n"
        f'  FILE *f = fopen("{marker}", "a"); if (f) {{ fputs("ran\\n", f); fclose(f); }}\n}}\n'
    )
    library = host.workspace / "evil.so"  # the agent's own file, in its workspace
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    prompt = "\n".join([f"runenv LD_PRELOAD={library} echo preloaded", "runenv GREETING=hello-inside printenv GREETING"])
    (result,) = waza.capture(
        [{"id": "p", "input": prompt}],
        waza.AcpAgent(command=(sys.executable, str(ACP_AGENT)), sandbox=waza.Sandbox()),
        workspace=waza.Workspace(cwd=host.workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    assert result.errors == [], result.stderr
    text = " ".join(step.content or "" for step in result.trajectory if step.type == "message" and step.role == "agent")
    assert "exit 0 truncated False: preloaded" in text and "hello-inside" in text, text
    assert not marker.exists()  # the constructor ran inside (its /tmp is private), never in bwrap on the host


def test_with_a_sandbox_a_workspace_holding_the_results_or_the_home_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    waza_bin = str(Path(sys.executable).with_name("waza"))
    base = ["capture", "p.jsonl", "--adapter", "exec", "--sandbox", "bwrap", "-o", "r.jsonl"]
    for extra, message in (
        (["--cwd", "."], "holds the results file"),
        (["--cwd", str(Path.home())], "holds a home"),
        (["--workspace-dir", "/tmp"], "holds a home or a temporary folder"),
    ):
        done = subprocess.run([waza_bin, *base, *extra, "--", "/bin/cat"], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, (extra, done.stderr)
        assert not (tmp_path / "r.jsonl").exists()
    # no workspace chosen: a fresh one per prompt, never the current directory that holds the prompts
    done = subprocess.run([waza_bin, *base, "--", "/bin/sh", "-c", "pwd; ls"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    output = json.loads((tmp_path / "r.jsonl").read_text())["output"]
    assert "p.jsonl" not in output and str(tmp_path) not in output, output


def test_as_an_ordinary_user_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line waza builds, run by bubblewrap as ``nobody`` (user namespaces, no setuid): the same
    hostile agent, from ``~/bin`` and through ``/bin/sh``. (waza itself may not be importable by nobody
    here, as its interpreter lives in root's home, so bwrap is what runs unprivileged.)"""
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run as nobody")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*nobody, "bwrap", "--ro-bind", "/", "/", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"bubblewrap does not run unprivileged here: {probe.stderr.decode(errors='replace').strip()}")
    base = Path(tempfile.mkdtemp(prefix="waza-nobody-"))
    try:
        host = Host(base)
        monkeypatch.setenv("HOME", str(host.home))
        for command, script in (([str(host.home / "bin" / "agent")], host.home / "bin" / "agent"),
                                (["/bin/sh", str(base / "agents" / "hostile.sh")], base / "agents" / "hostile.sh")):  # fmt: skip
            shown = host.hostile(script)
            for path in [base, *base.rglob("*")]:
                os.chown(path, 65534, 65534, follow_symlinks=False)
            argv = wrap_command(command, plan(Sandbox(), command), host.workspace)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(host.home)}
            done = subprocess.run([*nobody, *argv], cwd=host.workspace, env=env, input="go", capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            host.check(done.stdout, shown)
            (host.workspace / "answer.txt").unlink()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_git_test_command_runs_the_agents_work_inside_the_sandbox(host: Host) -> None:
    subprocess.run(["git", "init", "-q", str(host.workspace)], check=True)
    agent = host.base / "agents" / "writes-check.sh"
    agent.parent.mkdir(parents=True, exist_ok=True)
    check = f"#!/bin/sh\\ncat {host.home}/secret.txt {host.base}/tmp-secret.txt 2>/dev/null\\necho pwned > {host.outside}\\necho checked\\n"
    agent.write_text(f"#!/bin/sh\ncat > /dev/null\nprintf '{check}' > check.sh\nchmod +x check.sh\necho wrote\n")
    agent.chmod(0o755)
    grader = waza.Builtin(grader="git", config={"test_command": "./check.sh", "expect_created": ["check.sh"]})
    (result,) = waza.capture(
        [{"id": "p", "input": "go"}],
        waza.ExecAgent(command=(str(agent),), sandbox=waza.Sandbox()),
        (grader,),
        workspace=waza.Workspace(cwd=host.workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    (grade,) = result.grades
    assert grade.status == "passed", grade
    assert "checked" in grade.details["testOutput"] and "s3cr3t" not in grade.details["testOutput"], grade.details
    assert not host.outside.exists()  # its write outside failed, inside the sandbox


def test_waza_grade_with_sandbox_runs_a_test_command_of_earlier_results_inside(host: Host, tmp_path: Path) -> None:
    """Results captured earlier (no sandbox then), graded again: with ``--sandbox bwrap`` (``sandbox=`` in the
    API) the ``check.sh`` the agent wrote runs in a sandbox, reading no secret and writing nothing outside;
    without it, it runs on the host, as the guide says."""
    subprocess.run(["git", "init", "-q", str(host.workspace)], check=True)
    check = f"#!/bin/sh\ncat {host.home}/secret.txt {host.base}/tmp-secret.txt 2>/dev/null\necho pwned > {host.outside}\necho checked\n"
    agent = host.base / "agents" / "writes-check.sh"
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text(f"#!/bin/sh\ncat > /dev/null\nprintf '{check}' > check.sh\nchmod +x check.sh\necho wrote\n")
    agent.chmod(0o755)
    (captured,) = waza.capture(
        [{"id": "p", "input": "go"}],
        waza.ExecAgent(command=(str(agent),)),
        workspace=waza.Workspace(cwd=host.workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    assert (host.workspace / "check.sh").exists() and not host.outside.exists()
    results = tmp_path / "results.jsonl"
    results.write_bytes(captured.to_json() + b"\n")
    config = json.dumps({"test_command": "./check.sh", "expect_created": ["check.sh"]})
    done = subprocess.run(
        [sys.executable, "-m", "waza", "grade", str(results), "--sandbox", "bwrap", "-g", "builtin:git", "--grader-config", config],
        cwd=host.workspace, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (grade,) = json.loads(done.stdout)["grades"]
    assert grade["status"] == "passed", grade
    assert "checked" in grade["details"]["testOutput"] and "s3cr3t" not in grade["details"]["testOutput"], grade
    assert not host.outside.exists()  # its write outside failed, inside the sandbox
    grader = waza.Builtin(grader="git", config=json.loads(config))
    (unconfined,) = waza.grade([captured], [grader])
    assert "s3cr3t-home" in unconfined.grades[0].details["testOutput"] and host.outside.exists()  # the host, as documented


def test_files_only_root_may_read_in_etc_are_masked_for_an_agent_run_as_root(host: Host) -> None:
    """``/etc/shadow``, ``gshadow``, ``sudoers.d``, SSH host keys, ``ssl/private``: what an ordinary account
    may not read in ``/etc`` is empty inside the sandbox, though the agent runs as root; the rest of
    ``/etc`` (``passwd``, ``hosts``) is shown as before."""
    if os.getuid() != 0:
        pytest.skip("masking matters for root: an ordinary account cannot read these files anyway")
    if not Path("/etc/shadow").exists():
        pytest.skip("no /etc/shadow on this system")
    agent = host.base / "agents" / "reads-etc.sh"
    agent.parent.mkdir()
    agent.write_text(
        """#!/bin/sh
cat > /dev/null
for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_rsa_key; do
  cat "$f" 2>/dev/null
done
for d in /etc/ssl/private /etc/sudoers.d; do [ -d "$d" ] && ls -A "$d" | wc -l; done
cat /etc/ssl/private/* 2>/dev/null
touch /etc/ssl/private/planted 2>/dev/null && echo PLANTED
grep -c '^root:' /etc/passwd
id -u
"""
    )
    agent.chmod(0o755)
    (result,) = waza.capture(
        [{"id": "p", "input": "go"}],
        waza.ExecAgent(command=(str(agent),), sandbox=waza.Sandbox()),
        workspace=waza.Workspace(cwd=host.workspace),
        timeouts=waza.Timeouts(prompt=120),
    )
    assert result.errors == [], result.stderr
    shadow_root = Path("/etc/shadow").read_text().splitlines()[0]
    assert shadow_root.startswith("root:")
    assert shadow_root not in result.output and "PRIVATE KEY" not in result.output, result.output
    assert "PLANTED" not in result.output
    *listed, roots, uid = result.output.split()
    assert set(listed) <= {"0"}, result.output  # the private folders are empty
    assert (roots, uid) == ("1", "0"), result.output  # passwd shown; still root inside
