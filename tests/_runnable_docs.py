"""The code blocks of README.md and docs/*.md marked runnable, and a runner for one document.

A marker is an HTML comment on the line right before a block's opening fence (see
CONTRIBUTING.md):

- ``<!-- runnable -->``: the block runs (``sh``/``console`` with bash, ``python`` with this
  interpreter) and each command must exit 0;
- ``<!-- runnable: exit N -->``: each command of the block must exit N;
- ``<!-- runnable: with COMMAND -->``: the block runs while COMMAND serves (the running
  program its prose names: ``with tether serve examples/triage.agent``);
- ``<!-- runnable: file PATH -->``: the block is written to PATH (executable when it starts with
  ``#!``) before any block of the document runs.

Run as a program (``python _runnable_docs.py DOC WORKDIR``) it runs DOC's blocks in order in
WORKDIR, as a user who cloned the repository and activated its venv would: WORKDIR holds a copy
of ``examples/`` and the ``.venv``, the venv's ``bin`` leads ``PATH``, a FakeLLM it starts is
the model (``OPENAI_BASE_URL``), and the variables the example manifest reads are set. A
command that serves until Ctrl-C (``tether serve``, ``fake-llm``, ``run`` without
``--until-idle``, ``--follow``) is started, waited for until it says it serves, and
interrupted as a user would (SIGINT to its process group; it must exit 0): before the next
command, or when the block ends if it is written with a trailing ``&``. It prints one line per
block, and on a failure the command, its exit status and its output, and exits 1.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!--\s*runnable(?::\s*(?P<option>.*?))?\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
RUNS = {"sh": "shell", "console": "shell", "python": "python"}
#: A command that serves until Ctrl-C (matched against its words, comments left out).
SERVING = re.compile(r"^tether (serve|fake-llm|runtime start)\b|^tether run\b(?!.*--until-idle)")
#: Each command, and a server's wait to say it serves and to stop, is bounded by this.
BOUND = 60.0
#: The environment a reader of the docs sets up: the example manifest's webhook secret and CRM
#: token (docs/security.md: any value of 4 characters or more).
USER_ENV = {"TRIAGE_WEBHOOK_SECRET": "docs-webhook-secret", "CRM_TOKEN": "docs-crm-token"}


def serves(words: list[str]) -> bool:
    """Whether a command (its words, comments left out) serves until Ctrl-C."""
    while words and re.match(r"^\w+=", words[0]):  # the variables set for it
        words = words[1:]
    return bool(SERVING.search(" ".join(words))) or "--follow" in words


class MarkerError(ValueError):
    """A runnable marker that is malformed or not followed by a code block."""


@dataclass(frozen=True)
class Block:
    """One marked code block: where it is, its language, its text and what to do with it."""

    doc: str
    line: int  #: the line of the opening fence, 1-based
    lang: str
    text: str
    file: str | None = None  #: write it there instead of running it
    exit: int = 0  #: the exit status each of its commands must have
    serving: str | None = None  #: a command that serves while the block runs

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def documents() -> list[Path]:
    """README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def marked_blocks(path: Path) -> list[Block]:
    """The marked blocks of one Markdown file, in order; MarkerError for a bad marker."""
    doc = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    lines = path.read_text().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if marker is None:
            continue
        where = f"{doc}:{i + 1}"
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fence is None:
            raise MarkerError(f"{where}: a runnable marker must be right before a ``` fence")
        end = next((j for j in range(i + 2, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise MarkerError(f"{where}: the block after the marker is never closed")
        block = Block(doc, i + 2, fence["lang"], "\n".join(lines[i + 2 : end]) + "\n")
        blocks.append(_with_option(block, marker["option"] or "", where))
    return blocks


def _with_option(block: Block, option: str, where: str) -> Block:
    words = option.split()
    if not words:
        return _runnable(block, where)
    if words[0] == "file" and len(words) == 2:
        return replace(block, file=words[1])
    if words[0] == "exit" and len(words) == 2 and words[1].isdigit():
        return _runnable(replace(block, exit=int(words[1])), where)
    if words[0] == "with" and serves(words[1:]):
        return _runnable(replace(block, serving=" ".join(words[1:])), where)
    raise MarkerError(
        f"{where}: runnable option {option!r}: allowed: nothing, 'file PATH', 'exit N' "
        "or 'with COMMAND' (a command that serves until Ctrl-C)"
    )


def _runnable(block: Block, where: str) -> Block:
    if block.lang not in RUNS:
        raise MarkerError(
            f"{where}: a {block.lang or 'plain'} block cannot run "
            f"(runnable: {', '.join(RUNS)}; or 'runnable: file PATH')"
        )
    return block


def commands(block: Block) -> list[str]:
    """A shell block's commands: lines joined at a trailing backslash, comment-only and blank
    lines left out; in a ``console`` block only the lines after a ``$`` prompt."""
    found: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        line = raw
        if block.lang == "console" and not pending:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        found.append(pending + line)
        pending = ""
    return found


# --- the runner -------------------------------------------------------------------------------


class Failed(Exception):
    """A command or a block did not do what its document says."""


@dataclass
class Server:
    """A command that serves until Ctrl-C, in a process group of its own, and its output."""

    command: str
    process: subprocess.Popen[bytes]
    log: Path


def _environment(work: Path, model_url: str) -> dict[str, str]:
    venv_bin = Path(sys.prefix) / "bin"  # the venv this runs in, as `make` makes it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TETHER_"))}
    return {
        **env,
        **USER_ENV,
        "PATH": f"{venv_bin}{os.pathsep}{env.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv_bin.parent),
        "OPENAI_BASE_URL": model_url,
        "HOME": str(work / "home"),
        "NO_COLOR": "1",
    }


def _output(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _serve(command: str, work: Path, env: dict[str, str], log: Path) -> Server:
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(command, process, log)
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        text = _output(log)
        # Every tether command that serves until Ctrl-C says so once it serves; --follow
        # prints its table's header at once instead.
        if "Ctrl-C" in text or ("--follow" in command and text.strip()):
            return server
        if process.poll() is not None:
            raise Failed(f"{command}\nexited {process.returncode} instead of serving:\n{text}")
        time.sleep(0.05)
    _stop(server)
    raise Failed(f"{command}\ndid not say it serves within {BOUND:.0f} s:\n{_output(log)}")


def _stop(server: Server) -> None:
    """Ctrl-C, as a terminal sends it: SIGINT to the process group; it must exit 0."""
    if server.process.poll() is None:
        os.killpg(server.process.pid, signal.SIGINT)
    try:
        status = server.process.wait(BOUND)
    except subprocess.TimeoutExpired:
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()
        raise Failed(f"{server.command}\ndid not stop at Ctrl-C:\n{_output(server.log)}") from None
    with contextlib.suppress(ProcessLookupError):  # whatever of its group is left
        os.killpg(server.process.pid, signal.SIGKILL)
    if status != 0:
        raise Failed(f"{server.command}\nexited {status} at Ctrl-C:\n{_output(server.log)}")


def _run(argv: list[str], block: Block, what: str, work: Path, env: dict[str, str]) -> str:
    """Run a program; its stdout (Failed if it exits otherwise than the block says)."""
    try:
        done = subprocess.run(
            argv, cwd=work, env=env, capture_output=True, timeout=BOUND, check=False
        )
    except subprocess.TimeoutExpired as timeout:
        raise Failed(f"{what}\ndid not end within {BOUND:.0f} s") from timeout
    if done.returncode != block.exit:
        output = (done.stdout + done.stderr).decode(errors="replace")
        raise Failed(f"{what}\nexited {done.returncode}, not {block.exit}:\n{output}")
    return done.stdout.decode(errors="replace")


class Shell:
    """The one bash of a shell block: its commands run in it in turn (so a variable set on one
    line is there on the next), each with no stdin; each one's output and status are read back."""

    def __init__(self, work: Path, env: dict[str, str]) -> None:
        self.work, self.env = work, env
        self.process = subprocess.Popen(
            ["bash"],
            cwd=work,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.ended = re.compile(rb"\n--docs-command-ended-- (\d+)\n")

    def run(self, command: str) -> tuple[int, str]:
        """Run one command; its exit status and output (Failed past BOUND or if bash ends)."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        script = f"{{\n{command}\n}} </dev/null\nprintf '\\n--docs-command-ended-- %s\\n' $?\n"
        self.process.stdin.write(script.encode())
        self.process.stdin.flush()
        out = bytearray()
        deadline = time.monotonic() + BOUND
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while (ended := self.ended.search(out)) is None:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise Failed(f"{command}\ndid not end within {BOUND:.0f} s:\n{out.decode()}")
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    raise Failed(f"{command}\nended its shell:\n{out.decode(errors='replace')}")
                out += chunk
        return int(ended[1]), out[: ended.start()].decode(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate()


def _run_shell(block: Block, work: Path, env: dict[str, str]) -> None:
    kept: list[Server] = []
    shell = Shell(work, env)
    try:
        for n, command in enumerate(commands(block)):
            started = time.monotonic()
            _run_command(n, command, block, shell, kept)
            print(f"  {time.monotonic() - started:4.1f} s  {command}")
    finally:
        shell.close()
        _stop_all(kept)


def _stop_all(servers: list[Server]) -> None:
    """Stop every server, the last started first; the first that fails to stop is raised."""
    failures = []
    for server in reversed(servers):
        try:
            _stop(server)
        except Failed as failed:
            failures.append(failed)
    if failures:
        raise failures[0]


def _run_command(n: int, command: str, block: Block, shell: Shell, kept: list[Server]) -> None:
    """One command of a shell block; a server is stopped, or kept (trailing ``&``)."""
    words = shlex.split(command, comments=True)
    background = bool(words) and words[-1] == "&"
    if not serves(words):
        status, output = shell.run(command)
        if status != block.exit:
            raise Failed(f"{command}\nexited {status}, not {block.exit}:\n{output}")
        return
    line = re.sub(r"\s&\s*(#.*)?$", "", command) if background else command
    log = shell.work / ".docs-logs" / f"{block.line}-{n}.log"
    server = _serve(line, shell.work, shell.env, log)
    if background:
        kept.append(server)
    else:
        _stop(server)


def _run_python(block: Block, work: Path, env: dict[str, str]) -> None:
    script = work / ".docs-logs" / f"block-{block.line}.py"
    script.write_text(block.text)
    try:
        compile(block.text, str(script), "exec")
        argv = [sys.executable, str(script)]
    except SyntaxError:
        # A top-level await: the block runs as it would in `python -m asyncio`.
        argv = [sys.executable, "-c", _TOP_LEVEL_AWAIT, str(script)]
    printed = _run(argv, block, f"the Python block of {block.where}", work, env)
    stated = stated_output(block.text)
    if stated and not _matches(printed.splitlines(), stated):
        raise Failed(
            f"the Python block of {block.where}\nprinted:\n{printed}\nwhere its comments say:\n"
            + "\n".join(stated)
        )


def stated_output(text: str) -> list[str]:
    """What a Python block says it prints: the comment after a ``print(...)`` call, on its line
    or on the line after it."""
    stated = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("print("):
            continue
        after = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if "  # " in line:
            stated.append(line.split("  # ", 1)[1].strip())
        elif after.startswith("# "):
            stated.append(after[2:])
    return stated


def _matches(printed: list[str], stated: list[str]) -> bool:
    """Line for line; a ``<placeholder>`` in a stated line stands for any word."""
    patterns = [re.sub(r"<\w+>", r"\\S+", re.escape(line)) for line in stated]
    return len(printed) == len(patterns) and all(
        re.fullmatch(pattern, line) for pattern, line in zip(patterns, printed, strict=True)
    )


_TOP_LEVEL_AWAIT = """\
import ast, asyncio, sys, types
path = sys.argv[1]
code = compile(open(path).read(), path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
main = types.ModuleType("__main__")
sys.modules["__main__"] = main
result = eval(code, vars(main))
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


def _run_block(block: Block, work: Path, env: dict[str, str]) -> None:
    run = _run_python if RUNS[block.lang] == "python" else _run_shell
    if block.serving is None:
        run(block, work, env)
        return
    server = _serve(block.serving, work, env, work / ".docs-logs" / f"{block.line}-with.log")
    try:
        run(block, work, env)
    finally:
        _stop(server)


def prepare(work: Path) -> None:
    """The folder of a fresh clone, as far as the docs use it: examples/ and the venv."""
    shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("out"))
    (work / ".venv").symlink_to(sys.prefix)
    (work / "home").mkdir()
    (work / ".docs-logs").mkdir()


def run_document(doc: Path, work: Path) -> int:
    """Run one document's blocks in ``work``; print a line per block; 0 if all did as told."""
    blocks = marked_blocks(doc)
    for block in blocks:
        if block.file is not None:
            target = work / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            if block.text.startswith("#!"):
                target.chmod(0o755)
    model = subprocess.Popen(
        [sys.executable, "-m", "tether.testing", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert model.stdout is not None
        url = re.search(r"http://\S+/v1", model.stdout.readline())
        if url is None:
            print("FakeLLM did not print its URL")
            return 1
        env = _environment(work, url[0])
        for block in blocks:
            if block.file is not None:
                print(f"{block.where}: written to {block.file}")
                continue
            started = time.monotonic()
            try:
                _run_block(block, work, env)
            except Failed as failed:
                print(f"{block.where}: FAILED\n{failed}")
                return 1
            print(f"{block.where}: ran ({time.monotonic() - started:.1f} s)")
        return 0
    finally:
        model.send_signal(signal.SIGINT)
        model.wait(BOUND)


if __name__ == "__main__":
    # The docs' commands are stopped with Ctrl-C (SIGINT to their group). Started with SIGINT
    # ignored (pytest run as a background job of a script), this runner would hand that on to
    # them, and a command stopping at Python's KeyboardInterrupt (`--follow`) would never stop.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(run_document(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()))
