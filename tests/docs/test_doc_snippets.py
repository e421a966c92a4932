"""The code blocks of README.md and docs/*.md run as written: a snippet that stops working fails
`make test` (ctest: docs.snippets).

Every fenced block names its language:
  python       run by /usr/bin/python3 with PYTHONPATH=build/python (docs/python.md, Install);
               it must exit 0
  sh           run line by line by bash (below)
  text, json   output, diagrams, formats: not code, not run
A block that cannot run on its own (C++ or CMake that needs a program around it, a fragment,
placeholders such as HOST, minutes of run time, a system install) is marked by the line
    <!-- not-run: why -->
right before its fence; it is skipped with that reason (pytest -rs lists every one). A block
of any other language without that mark fails, and so does a mark without a block after it.

Blocks run in a scratch root that looks like the source tree (its entries linked; `build` holds
the build's tools/, examples/ and python/ only, so no block can touch the build itself), with
PYTHONPATH and the MUSTER_* variables removed, as in a fresh shell, and the build's tools/ first
on PATH (a bare `muster` is the installed command). The documented port 7400 becomes a free
port, and a `muster serve`, or a `muster run` that hosts its leader, without --port gets one.
A line that would build, install or change the system (make, cmake, apt-get, sudo, pip,
bench/run.sh, tools/install-deps.sh) is refused: such a block has to be marked not-run.
The lines of a sh block (a trailing backslash continues one) run in order, each for a terminal:
  - `muster serve` starts in the background; the next line runs once it printed its ready line;
  - what runs until it is stopped (a worker with --hold, `kv watch` without --count,
    `status --watch`, `events --follow`) starts in the background and must still be running at
    the block's end;
  - a worker without --hold starts in the background too (it waits for the tasks the next lines
    start) and must have exited 0 by the block's end;
  - every other line must exit 0.
Then everything still running is stopped (SIGTERM to its process group).
"""

import dataclasses
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

import pytest

SOURCE = Path(os.environ.get("MUSTER_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("MUSTER_BUILD_DIR", SOURCE / "build"))
DOCUMENTED_PORT = "7400"
RUN_LANGUAGES = ("python", "sh")
TEXT_LANGUAGES = ("text", "json")
BLOCK_SECONDS = 90  # the longest block (four ranks of examples/torch_train.py, twice) ~15 s
READY_SECONDS = 15
BUILD_ENTRIES = ("tools", "examples", "python")  # what the documented commands run
REFUSED = re.compile(r"(^|[\s;&|(])(make|cmake|ninja|apt|apt-get|dpkg|sudo|pip3?|"
                     r"\S*bench/run\.sh|\S*install-deps\.sh)(\s|$)")

FENCE = re.compile(r"^(\s*)```(.*)$")
MARK = re.compile(r"^\s*<!--\s*not-run:(.*?)-->\s*$")


@dataclasses.dataclass
class Block:
    path: str  # relative to the source root
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    not_run: Optional[str]  # the mark's reason; None when unmarked

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}"


def parse_blocks(path: str, text: str) -> List[Block]:
    """The fenced blocks of a markdown file. Raises ValueError on a mark without a block."""
    lines = text.split("\n")
    blocks, i = [], 0
    pending_mark, mark_line = None, 0
    while i < len(lines):
        mark = MARK.match(lines[i])
        fence = FENCE.match(lines[i])
        if mark:
            if pending_mark is not None:
                raise ValueError(f"{path}:{mark_line}: not-run mark without a code block after it")
            pending_mark, mark_line = mark.group(1).strip(), i + 1
        elif fence:
            indent, language = fence.group(1), fence.group(2).strip()
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise ValueError(f"{path}:{i + 1}: code block never closed")
            body = [line[len(indent):] if line.startswith(indent) else line
                    for line in lines[i + 1:end]]
            blocks.append(Block(path, i + 1, language, "\n".join(body) + "\n", pending_mark))
            pending_mark, i = None, end
        elif lines[i].strip() and pending_mark is not None:
            raise ValueError(f"{path}:{mark_line}: not-run mark without a code block right after it")
        i += 1
    if pending_mark is not None:
        raise ValueError(f"{path}:{mark_line}: not-run mark without a code block after it")
    return blocks


def documented_files() -> List[Path]:
    return [SOURCE / "README.md"] + sorted((SOURCE / "docs").glob("*.md"))


def all_blocks() -> List[Block]:
    blocks = []
    for file in documented_files():
        blocks += parse_blocks(str(file.relative_to(SOURCE)), file.read_text())
    return blocks


def code_blocks() -> List[Block]:
    return [b for b in all_blocks() if b.language not in TEXT_LANGUAGES]


# Running ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scratch_root(where: Path) -> Path:
    """A directory that looks like the source root: its entries linked, and a `build` with the
    build's programs and Python package (not its CMake state)."""
    root = where / "root"
    (root / "build").mkdir(parents=True)
    for entry in SOURCE.iterdir():
        if entry.name not in ("build", ".git"):
            (root / entry.name).symlink_to(entry)
    for name in BUILD_ENTRIES:
        (root / "build" / name).symlink_to(BUILD / name)
    return root


def fresh_environment(root: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith("MUSTER_")}
    env["PATH"] = f"{root / 'build' / 'tools'}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def shell_lines(code: str) -> List[str]:
    """The commands of a sh block: continuation lines joined, blank and comment lines left out."""
    commands, current = [], ""
    for line in code.split("\n"):
        if current:
            current += " " + line.strip()
        else:
            current = line.strip()
        if current.endswith("\\"):
            current = current[:-1].rstrip()
            continue
        if current and not current.startswith("#"):
            commands.append(current)
        current = ""
    return commands


def is_serve(command: str) -> bool:
    return re.search(r"(^|[\s/])muster serve\b", command) is not None


def runs_until_stopped(command: str) -> bool:
    if "--hold" in command:
        return True
    if re.search(r"\bmuster kv watch\b", command) and "--count" not in command:
        return True
    if re.search(r"\bmuster events\b", command) and "--follow" in command:
        return True
    return re.search(r"\bmuster status\b", command) is not None and "--watch" in command


def is_waiting_worker(command: str) -> bool:
    return re.search(r"(^|[\s/])examples/worker\b", command.split(" -- ")[0]) is not None


def with_port(command: str, port: int) -> str:
    command = re.sub(rf"\b{DOCUMENTED_PORT}\b", str(port), command)
    hosts = re.search(r"\bmuster (serve|run)\b", command)
    if hosts and not re.search(r"--(port|leader)\b", command.split(" -- ")[0]):
        command = command[:hosts.end()] + f" --port {port}" + command[hosts.end():]
    return command


class Process:
    def __init__(self, command: str, root: Path, env: dict, log: Path):
        self.command, self.log = command, log
        with open(log, "wb") as out:
            self.popen = subprocess.Popen(["bash", "-c", command], cwd=root, env=env,
                                          stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        text = self.log.read_text(errors="replace")
        return text if len(text) < 6000 else "...\n" + text[-6000:]

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()


class BlockFailed(AssertionError):
    pass


def _fail(block: Block, process: Process, why: str) -> None:
    raise BlockFailed(f"{block.name}: `{process.command}` {why}; its output:\n{process.output()}")


def run_shell(block: Block, root: Path, deadline: float) -> None:
    env = fresh_environment(root)
    port = free_port()
    stays, finishes, started = [], [], []
    try:
        for n, command in enumerate(shell_lines(block.code)):
            if REFUSED.search(command):
                raise BlockFailed(f"{block.name}: `{command}` would build, install or change the "
                                  f"system: mark the block <!-- not-run: why -->")
            process = Process(with_port(command, port), root, env, root.parent / f"cmd{n}.log")
            started.append(process)
            if is_serve(command):
                ready = time.monotonic() + READY_SECONDS
                while "ready at" not in process.output() and process.popen.poll() is None:
                    if time.monotonic() > ready:
                        _fail(block, process, f"printed no ready line within {READY_SECONDS} s")
                    time.sleep(0.05)
                if process.popen.poll() is not None:
                    _fail(block, process, f"exited with {process.popen.returncode}")
                stays.append(process)
            elif runs_until_stopped(command):
                stays.append(process)
            elif is_waiting_worker(command):
                finishes.append(process)
            else:
                try:
                    code = process.popen.wait(max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    _fail(block, process, "did not finish in time")
                if code != 0:
                    _fail(block, process, f"exited with {code}")
        for process in finishes:
            try:
                code = process.popen.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _fail(block, process, "did not finish in time")
            if code != 0:
                _fail(block, process, f"exited with {code}")
        time.sleep(0.3)  # what should keep running has had the time to fail
        for process in stays:
            if process.popen.poll() is not None:
                _fail(block, process, f"should run until stopped but exited with "
                                      f"{process.popen.returncode}")
    finally:
        for process in reversed(started):  # the leader last
            process.stop()


def run_python(block: Block, root: Path, deadline: float) -> None:
    env = fresh_environment(root)
    env["PYTHONPATH"] = "build/python"
    script = root.parent / f"snippet_{block.line}.py"
    script.write_text(block.code)
    process = Process(f"/usr/bin/python3 {script}", root, env, root.parent / "python.log")
    try:
        code = process.popen.wait(max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _fail(block, process, "did not finish in time")
    finally:
        process.stop()
    if code != 0:
        _fail(block, process, f"exited with {code}")


def run_block(block: Block, where: Path) -> None:
    root = scratch_root(where)
    deadline = time.monotonic() + BLOCK_SECONDS
    if block.language == "python":
        run_python(block, root, deadline)
    else:
        run_shell(block, root, deadline)


# Tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", code_blocks(), ids=lambda b: b.name)
def test_snippet(block: Block, tmp_path: Path) -> None:
    if block.not_run is not None:
        if not block.not_run:
            pytest.fail(f"{block.name}: the not-run mark needs a reason")
        pytest.skip(f"{block.name} not run: {block.not_run}")
    if block.language not in RUN_LANGUAGES:
        pytest.fail(f"{block.name}: a ```{block.language or '(no language)'} block: name its "
                    f"language ({', '.join(RUN_LANGUAGES + TEXT_LANGUAGES)}), or put "
                    f"<!-- not-run: why --> right before it")
    run_block(block, tmp_path)


def test_the_documents_have_code_blocks_and_every_mark_a_block() -> None:
    blocks = all_blocks()  # raises on a stray mark
    assert len([b for b in blocks if b.language in RUN_LANGUAGES and b.not_run is None]) >= 10


# The checker itself: a block that fails, fails the test.


def test_parse_blocks_marks_languages_and_indented_fences() -> None:
    text = ("a\n```sh\necho 1\n```\n<!-- not-run: a fragment -->\n```cpp\nint x;\n```\n"
            "- item\n\n  ```python\n  print(1)\n  ```\n```\nout\n```\n")
    blocks = parse_blocks("x.md", text)
    assert [(b.line, b.language, b.code, b.not_run) for b in blocks] == [
        (2, "sh", "echo 1\n", None), (6, "cpp", "int x;\n", "a fragment"),
        (11, "python", "print(1)\n", None), (14, "", "out\n", None)]
    with pytest.raises(ValueError, match="x.md:1: not-run mark without a code block"):
        parse_blocks("x.md", "<!-- not-run: stale -->\ntext\n```sh\nls\n```\n")


def test_shell_lines_and_ports() -> None:
    code = "# a comment\n./build/tools/muster serve --port 7400  # terminal 1\n\nA=1 \\\n  b c\n"
    assert shell_lines(code) == ["./build/tools/muster serve --port 7400  # terminal 1", "A=1 b c"]
    assert with_port("muster status --leader 127.0.0.1:7400", 9) == \
        "muster status --leader 127.0.0.1:9"
    assert with_port("muster run --job w=1 -- ./w --port 3", 9) == \
        "muster run --port 9 --job w=1 -- ./w --port 3"
    assert with_port("muster run --leader h:1 --tasks 1 -- w", 9) == \
        "muster run --leader h:1 --tasks 1 -- w"
    assert with_port("muster serve --job w=2", 9) == "muster serve --port 9 --job w=2"


def test_commands_that_change_the_build_or_the_system_are_refused(tmp_path: Path) -> None:
    for code in ("make demo\n", "cmake --install build\n", "bench/run.sh --quick\n",
                 "A=1 sudo -n true\n", "true && apt-get install x\n"):
        with pytest.raises(BlockFailed, match="would build, install or change the system"):
            run_shell(Block("x.md", 1, "sh", code, None), tmp_path, time.monotonic() + 5)


def test_a_failing_block_fails(tmp_path: Path) -> None:
    with pytest.raises(BlockFailed, match=r"x.md:3: .* exited with 3"):
        run_block(Block("x.md", 3, "python", "raise SystemExit(3)\n", None), tmp_path / "p")
    with pytest.raises(BlockFailed, match=r"`false` exited with 1"):
        run_block(Block("x.md", 1, "sh", "true\nfalse\n", None), tmp_path / "s")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-rs"]))
