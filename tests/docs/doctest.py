"""Runs every code block of README.md and docs/**/*.md (`make test-docs`).

Each fenced block names its language; the checked ones are run against a
real ZooKeeper from the project's harness, with the text ``127.0.0.1:2181``
replaced by the test server's connect string:

- ``rust``: a binary of its own, built against zklock-core (and tokio) in a
  generated crate (target/doctest/rust), then run;
- ``c``: ``cc -std=c11 -Wall -Wextra -Werror -Iinclude``, linked with
  target/debug/libzklock.so (``make ffi``), then run;
- ``python``: run by the oldest and the newest Python the package claims
  (``requires-python`` and the classifiers of bindings/python/pyproject.toml),
  each in a venv of its own with the package's wheel installed;
- ``js``: run by every Node major the package claims that is installed here
  (the system node and those of scripts/install-deps.sh in
  target/node-versions), ``require('zklock')`` resolving to bindings/node and
  the package's peer dependencies (``prom-client``, which a user of
  ``zklock/metrics`` installs beside zklock) to bindings/node/node_modules; a
  block with ``import``/``export`` statements runs as an ES module;
- ``sh``: ``bash -e`` in a temporary directory, the built ``zklock`` command
  on PATH;
- ``toml``: parsed; a Cargo dependency on a crate of this workspace must
  name it and a version that the workspace version satisfies;
- ``sql``: run statement by statement in a fresh in-memory SQLite database
  (named parameters bound to NULL), so a block that runs creates its tables.

``text`` blocks and MyST directives (```` ```{toctree} ````) are not code.
A fence without a language, an indented code block or a language not listed
is an error. The line right before a fence may hold a directive:

- ``<!-- doctest: skip-run: REASON -->``: only compiled or syntax-checked;
- ``<!-- doctest: fails: TEXT -->``: must exit non-zero with TEXT in its
  output.

Otherwise a block must exit with 0 within the time limit. Every result line
names the block as file:line and its language (and the interpreter).

Run it through the harness wrapper (``make test-docs`` does), or directly: it
starts a server with zklock-ffi/tests/c/with-zk.sh when
ZKLOCK_TEST_CONNECT is not set. ``--only README.md:149`` (or a file, or a
language) picks blocks.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import tomllib
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
WORK = ROOT / "target" / "doctest"
#: The connect string the blocks are written with.
DOC_CONNECT = "127.0.0.1:2181"
CHECKED = ("rust", "c", "python", "js", "sh", "toml", "sql")
NOT_CODE = ("text",)
DIRECTIVE = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")
TIMEOUT = float(os.environ.get("ZKLOCK_DOCTEST_TIMEOUT", "60"))


@dataclass
class Block:
    """One fenced block: where it is, its language, its code and what is asked of it."""

    file: str
    line: int
    lang: str
    code: str
    #: "run", "skip-run" or "fails".
    mode: str = "run"
    #: The reason of skip-run, the text of fails.
    arg: str = ""

    @property
    def name(self) -> str:
        return "%s:%d %s" % (self.file, self.line, self.lang)

    def source(self, connect: str) -> str:
        return self.code.replace(DOC_CONNECT, connect)


@dataclass
class Result:
    block: Optional[Block]
    label: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    results: List[Result] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    #: Print each result as it comes.
    echo: bool = True

    def add(self, block: Optional[Block], label: str, ok: bool, detail: str = "") -> None:
        r = Result(block, label, ok, detail)
        self.results.append(r)
        if not self.echo:
            return
        status = "ok  " if ok else "FAIL"
        print("%s %s%s" % (status, label, "" if ok or not detail else "\n" + indent(detail)), flush=True)


def indent(text: str, limit: int = 60) -> str:
    lines = text.rstrip().splitlines()
    if len(lines) > limit:
        lines = lines[: limit // 2] + ["    ... (%d lines) ..." % (len(lines) - limit)] + lines[-limit // 2 :]
    return "\n".join("    | " + line for line in lines)


# ---- Finding the blocks -------------------------------------------------------


def markdown_files(texts: Path) -> List[str]:
    """README.md and every docs/**/*.md under ``texts``, relative to it."""
    files = ["README.md"] + sorted(glob.glob("docs/**/*.md", root_dir=texts, recursive=True))
    return [f for f in files if (texts / f).is_file()]


def extract(texts: Path, files: Sequence[str], report: Report) -> List[Block]:
    """The checked blocks of ``files``; an error in ``report`` for every block
    without a language, with an unknown one, or with a bad directive."""
    md = MarkdownIt("commonmark")
    blocks: List[Block] = []
    for f in files:
        text = (texts / f).read_text(encoding="utf-8")
        lines = text.splitlines()
        fence_starts = set()
        for tok in md.parse(text):
            if tok.type not in ("fence", "code_block") or tok.map is None:
                continue
            start = tok.map[0]
            fence_starts.add(start)
            where = "%s:%d" % (f, start + 1)
            info = tok.info.strip().split()
            lang = info[0] if info else ""
            if tok.type == "code_block":
                report.add(
                    None,
                    where,
                    False,
                    "an indented code block: write a fence with its language (text if it is not code)",
                )
                continue
            if lang.startswith("{"):
                continue  # a MyST directive ({toctree}, {include}, ...): not code
            prev = lines[start - 1] if start > 0 else ""
            m = DIRECTIVE.match(prev)
            if not lang:
                report.add(
                    None,
                    where,
                    False,
                    "a fence without a language: every block says its language (text if it is not code)",
                )
                continue
            if lang in NOT_CODE:
                if m:
                    report.add(
                        None, "%s %s" % (where, lang), False, "a doctest directive before a block that is not code"
                    )
                continue
            if lang not in CHECKED:
                report.add(
                    None,
                    "%s %s" % (where, lang),
                    False,
                    "unknown language %r: the checked ones are %s; %s is not code"
                    % (lang, ", ".join(CHECKED), ", ".join(NOT_CODE)),
                )
                continue
            block = Block(f, start + 1, lang, tok.content)
            if m:
                kind, _, arg = m.group(1).partition(":")
                kind, arg = kind.strip(), arg.strip()
                if kind not in ("skip-run", "fails") or not arg:
                    report.add(
                        None,
                        block.name,
                        False,
                        "bad directive %r: write <!-- doctest: skip-run: REASON --> or <!-- doctest: fails: TEXT -->"
                        % prev.strip(),
                    )
                    continue
                block.mode, block.arg = kind, arg
            blocks.append(block)
        for i, line in enumerate(lines):
            if DIRECTIVE.match(line) and i + 1 not in fence_starts:
                report.add(
                    None,
                    "%s:%d" % (f, i + 1),
                    False,
                    "a doctest directive that is not on the line right before a fence",
                )
    return blocks


# ---- Running ------------------------------------------------------------------


def block_env(**extra: str) -> Dict[str, str]:
    """The environment of a block: ours without ZKLOCK_*, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZKLOCK_")}
    env.update(extra)
    return env


def run(
    cmd: Sequence[str], cwd: Path, env: Optional[Dict[str, str]] = None, timeout: float = TIMEOUT
) -> Tuple[Optional[int], str]:
    """Runs ``cmd`` in a process group of its own; (exit code, stdout+stderr).
    On timeout the group is killed and the code is None. ``env`` defaults to
    ours without ZKLOCK_* (a block must not lean on the runner's settings,
    e.g. ZKLOCK_HOSTS or the harness's ZKLOCK_TEST_CONNECT)."""
    proc = subprocess.Popen(
        list(cmd),
        cwd=cwd,
        env=block_env() if env is None else env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out


def judge(block: Block, label: str, rc: Optional[int], out: str, report: Report) -> None:
    """Records a run's result against what the block asks for."""
    if rc is None:
        report.add(block, label, False, "timed out after %g s (killed)\n%s" % (TIMEOUT, out))
    elif block.mode == "fails":
        if rc == 0:
            report.add(block, label, False, "marked fails: %r, but exited with 0\n%s" % (block.arg, out))
        elif block.arg not in out:
            report.add(
                block, label, False, "exited with %d as marked, but without %r in its output\n%s" % (rc, block.arg, out)
            )
        else:
            report.add(block, label, True)
    elif rc != 0:
        report.add(block, label, False, "exited with %d\n%s" % (rc, out))
    else:
        report.add(block, label, True)


def check_only(block: Block, label: str, rc: Optional[int], out: str, report: Report) -> None:
    """Records a compile or syntax check (skip-run blocks, and the build step of the others)."""
    if rc == 0:
        report.add(block, label + " (skip-run: checked only)", True)
    else:
        report.add(block, label, False, "does not compile%s\n%s" % (" (timed out)" if rc is None else "", out))


class Scratch:
    """A temporary directory per block, outside the repository (a block must
    not find the workspace, its node_modules or its venvs by accident)."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="zklock-doctest."))
        self.n = 0

    def new(self) -> Path:
        self.n += 1
        d = self.base / str(self.n)
        d.mkdir()
        return d

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


# ---- Python -------------------------------------------------------------------


def claimed_pythons() -> Tuple[str, str]:
    """The oldest and the newest CPython minor version the package claims."""
    meta = tomllib.loads((ROOT / "bindings/python/pyproject.toml").read_text())["project"]
    low = re.fullmatch(r">=\s*3\.(\d+)", meta["requires-python"].strip())
    if not low:
        raise SystemExit("doctest: cannot read requires-python %r" % meta["requires-python"])
    minors = [
        int(m.group(1))
        for c in meta["classifiers"]
        for m in [re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c)]
        if m
    ]
    return "3.%s" % low.group(1), "3.%d" % max(minors)


def find_python(version: str) -> Path:
    """An interpreter of ``version`` (3.N): pyenv's newest 3.N.x, or python3.N
    on PATH; each candidate is asked its version (a pyenv shim may say no)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = sorted(
        pyenv.glob(version + ".*/bin/python" + version),
        key=lambda p: [int(x) for x in p.parents[1].name.split(".") if x.isdigit()],
        reverse=True,
    )
    found = shutil.which("python" + version)
    candidates += [Path(found)] if found else []
    for c in candidates:
        answer = subprocess.run(
            [str(c), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
        )
        if answer.returncode == 0 and answer.stdout.strip() == version:
            return c
    raise SystemExit(
        "doctest: no Python %s found (looked in %s and for python%s on PATH); the docs' Python blocks run"
        " on the oldest and the newest Python the package claims" % (version, pyenv, version)
    )


def python_venv(version: str, wheel: Path) -> Path:
    """target/doctest/venv-3.N with the wheel installed; its python."""
    venv = WORK / ("venv-" + version)
    py = venv / "bin" / "python"
    if not py.exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([str(find_python(version)), "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            str(py),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-index",
            "--force-reinstall",
            "--no-deps",
            str(wheel),
        ],
        check=True,
    )
    # What the docs' blocks use beside zklock (zklock.metrics' exporter
    # needs prometheus_client), at the test suite's pins.
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *doc_extras()],
        check=True,
    )
    return py


def doc_extras() -> List[str]:
    """The pinned requirements of the Python test venv that the docs'
    blocks import: prometheus_client."""
    pins = (ROOT / "bindings" / "python" / "requirements-test.txt").read_text().splitlines()
    return [p.strip() for p in pins if p.strip().startswith("prometheus_client==")]


def find_wheel(arg: Optional[str]) -> Path:
    if arg:
        return Path(arg).resolve()
    wheels = sorted((WORK / "wheels").glob("zklock_rs-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        raise SystemExit(
            "doctest: no wheel in %s: build it with `make test-docs` (or pass --wheel)" % (WORK / "wheels")
        )
    return wheels[-1]


def run_python(blocks: List[Block], connect: str, wheel: Path, scratch: Scratch, report: Report) -> None:
    if not blocks:
        return
    for version in claimed_pythons():
        py = python_venv(version, wheel)
        full = subprocess.run(
            [str(py), "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True
        ).stdout.strip()
        report.notes.append("python blocks ran on Python %s (%s)" % (full, py))
        for b in blocks:
            label = "%s [Python %s]" % (b.name, full)
            d = scratch.new()
            f = d / "block.py"
            f.write_text(b.source(connect))
            if b.mode == "skip-run":
                rc, out = run(
                    [str(py), "-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')", str(f)], d
                )
                check_only(b, label, rc, out, report)
            else:
                rc, out = run([str(py), str(f)], d)
                judge(b, label, rc, out, report)


# ---- Node ---------------------------------------------------------------------


def claimed_node_majors() -> List[int]:
    engines = json.loads((ROOT / "bindings/node/package.json").read_text())["engines"]["node"]
    m = re.fullmatch(r">=\s*(\d+)", engines.strip())
    if not m:
        raise SystemExit("doctest: cannot read engines.node %r" % engines)
    # The even (LTS) majors from the claimed one up to the newest installed by
    # scripts/install-deps.sh (scripts/node-versions/package.json).
    pinned = json.loads((ROOT / "scripts/node-versions/package.json").read_text())["dependencies"]
    newest = max(int(re.search(r"@(\d+)\.", v).group(1)) for v in pinned.values())  # type: ignore[union-attr]
    return list(range(int(m.group(1)), newest + 1, 2))


def find_nodes(report: Report) -> Dict[int, Path]:
    """Node binaries by major: target/node-versions/node_modules/node<N>/bin/node and the system node."""
    nodes: Dict[int, Path] = {}
    for p in sorted((ROOT / "target/node-versions/node_modules").glob("node*/bin/node")):
        major = int(p.parent.parent.name[len("node") :])
        nodes[major] = p
    system = shutil.which("node")
    if system:
        v = subprocess.run([system, "-p", "process.versions.node"], capture_output=True, text=True).stdout.strip()
        nodes.setdefault(int(v.split(".")[0]), Path(system))
    return nodes


def node_peers() -> List[Tuple[str, Path]]:
    """The peer dependencies of bindings/node/package.json (optional ones
    too) and where bindings/node/node_modules has them: a block finds them
    beside zklock, as they are in a user's project."""
    manifest = json.loads((ROOT / "bindings/node/package.json").read_text())
    peers = []
    for name in sorted(manifest.get("peerDependencies", {})):
        installed = ROOT / "bindings" / "node" / "node_modules" / name
        if not (installed / "package.json").exists():
            raise SystemExit("doctest: %s is missing: make node-deps" % installed)
        peers.append((name, installed))
    return peers


def run_js(blocks: List[Block], connect: str, scratch: Scratch, report: Report) -> None:
    if not blocks:
        return
    nodes = find_nodes(report)
    peers = node_peers()
    for major in claimed_node_majors():
        if major not in nodes:
            report.add(
                None,
                "Node %d" % major,
                False,
                "not installed: scripts/install-deps.sh installs it into target/node-versions (linux-x64 only);"
                " the js blocks did not run on it",
            )
    for major in sorted(nodes):
        node = nodes[major]
        version = subprocess.run([str(node), "--version"], capture_output=True, text=True).stdout.strip()
        report.notes.append("js blocks ran on Node %s (%s)" % (version, node))
        for b in blocks:
            label = "%s [Node %s]" % (b.name, version)
            d = scratch.new()
            (d / "node_modules").mkdir()
            (d / "node_modules" / "zklock").symlink_to(ROOT / "bindings" / "node", target_is_directory=True)
            for name, installed in peers:
                (d / "node_modules" / name).parent.mkdir(parents=True, exist_ok=True)
                (d / "node_modules" / name).symlink_to(installed, target_is_directory=True)
            esm = re.search(r"^\s*(import|export)\s", b.code, re.M) is not None
            f = d / ("block.mjs" if esm else "block.cjs")
            f.write_text(b.source(connect))
            if b.mode == "skip-run":
                rc, out = run([str(node), "--check", str(f)], d)
                check_only(b, label, rc, out, report)
            else:
                rc, out = run([str(node), str(f)], d)
                judge(b, label, rc, out, report)


# ---- C ------------------------------------------------------------------------


def run_c(blocks: List[Block], connect: str, scratch: Scratch, report: Report) -> None:
    built = TARGET / "debug" / "libzklock.so"
    if not blocks:
        return
    if not built.exists():
        raise SystemExit("doctest: %s is missing: make ffi" % built)
    # The library under its SONAME too (libzklock.so.0), as an install has it.
    lib = WORK / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    for name in ("libzklock.so", "libzklock.so.0"):
        (lib / name).unlink(missing_ok=True)
        (lib / name).symlink_to(built)
    for b in blocks:
        d = scratch.new()
        (d / "block.c").write_text(b.source(connect))
        cc = os.environ.get("CC", "cc")
        rc, out = run(
            [
                cc,
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-I",
                str(ROOT / "include"),
                "block.c",
                "-o",
                "block",
                "-L",
                str(lib),
                "-lzklock",
                "-Wl,-rpath," + str(lib),
            ],
            d,
        )
        if b.mode == "skip-run" or rc != 0:
            check_only(b, b.name, rc, out, report)
            continue
        rc, out = run([str(d / "block")], d)
        judge(b, b.name, rc, out, report)


# ---- sh -----------------------------------------------------------------------


def run_sh(blocks: List[Block], connect: str, scratch: Scratch, report: Report) -> None:
    cli = TARGET / "debug" / "zklock"
    if blocks and not cli.exists():
        raise SystemExit("doctest: %s is missing: cargo build -p zklock-cli" % cli)
    env = block_env(PATH="%s:%s" % (cli.parent, os.environ.get("PATH", "")))
    for b in blocks:
        d = scratch.new()
        (d / "block.sh").write_text(b.source(connect))
        if b.mode == "skip-run":
            rc, out = run(["bash", "-n", "block.sh"], d, env)
            check_only(b, b.name, rc, out, report)
        else:
            rc, out = run(["bash", "-e", "block.sh"], d, env)
            judge(b, b.name, rc, out, report)


# ---- toml, sql ----------------------------------------------------------------


def workspace_crates() -> Dict[str, str]:
    """Name -> version of every package of the workspace."""
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps", "--locked", "--offline"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    return {p["name"]: p["version"] for p in meta["packages"]}


def version_matches(req: str, version: str) -> bool:
    """Whether the Cargo requirement ``req`` (bare, ^, ~ or =, e.g. "0.1") accepts ``version``."""
    m = re.fullmatch(r"\s*([\^~=]?)\s*(\d+(?:\.\d+){0,2})\s*", req)
    if not m:
        return False
    want = [int(x) for x in m.group(2).split(".")]
    have = [int(x) for x in version.split("-")[0].split(".")]
    if m.group(1) == "=" or m.group(1) == "~":
        return have[: len(want)] == want
    # Caret (Cargo's default): the same left-most non-zero part, not older.
    significant = next((i for i, x in enumerate(want) if x != 0), len(want) - 1)
    return have[: significant + 1] == want[: significant + 1] and have[: len(want)] >= want


def check_toml(b: Block, crates: Dict[str, str]) -> Optional[str]:
    """None if the block is good TOML whose dependencies on workspace crates are right, else why not."""
    try:
        doc = tomllib.loads(b.code)
    except tomllib.TOMLDecodeError as e:
        return "not TOML: %s" % e
    if b.mode == "skip-run":
        return None
    problems = []
    for table in ("dependencies", "dev-dependencies", "build-dependencies"):
        for key, spec in (doc.get(table) or {}).items():
            name = spec.get("package", key) if isinstance(spec, dict) else key
            if not name.startswith("zklock"):
                continue
            if name not in crates:
                problems.append(
                    "[%s] %s: no crate of this workspace is called that (%s)" % (table, name, ", ".join(sorted(crates)))
                )
                continue
            req = spec.get("version") if isinstance(spec, dict) else spec
            if req is not None and not version_matches(str(req), crates[name]):
                problems.append(
                    "[%s] %s = %r does not accept the workspace's version %s" % (table, name, req, crates[name])
                )
            if isinstance(spec, dict) and "path" in spec and not str(spec["path"]).rstrip("/").endswith(name):
                problems.append(
                    "[%s] %s: path %r does not end in the crate's directory %s" % (table, name, spec["path"], name)
                )
    return "\n".join(problems) or None


def report_checked(b: Block, why: Optional[str], report: Report, skipped: str, fine: str) -> None:
    """Reports a block checked without running a program: ``why`` is None
    or the problem found; ``skipped`` names a skip-run check, ``fine`` what
    a block marked ``fails`` did instead."""
    if b.mode == "fails":
        ok = why is not None and b.arg in why
        report.add(b, b.name, ok, "" if ok else "marked fails: %r, but: %s" % (b.arg, why or fine))
    else:
        label = b.name + (" (skip-run: %s)" % skipped if b.mode == "skip-run" and why is None else "")
        report.add(b, label, why is None, why or "")


def run_toml(blocks: List[Block], report: Report) -> None:
    crates = workspace_crates() if blocks else {}
    for b in blocks:
        report_checked(b, check_toml(b, crates), report, "parsed only", "it is fine")


def sql_statements(code: str) -> List[str]:
    """The statements of ``code``, split where SQLite says one is complete."""
    out, cur = [], ""
    for line in code.splitlines(keepends=True):
        cur += line
        if sqlite3.complete_statement(cur):
            out.append(cur)
            cur = ""
    if cur.strip() and not all(ln.strip().startswith("--") or not ln.strip() for ln in cur.splitlines()):
        out.append(cur)
    return out


def sql_run(b: Block) -> Optional[str]:
    """Runs the block's statements in a fresh in-memory database; None or the error.
    Parse-only (skip-run): only errors other than a missing table or column count."""
    db = sqlite3.connect(":memory:")
    try:
        for stmt in sql_statements(b.code):
            names = set(re.findall(r"[:@$]([A-Za-z_]\w*)", re.sub(r"'[^']*'|--[^\n]*", "", stmt)))
            try:
                db.execute(stmt, {n: None for n in names})
            except sqlite3.Error as e:
                if b.mode == "skip-run" and re.match(r"no such (table|column)", str(e)):
                    continue
                return "%s: %s\nin: %s" % (type(e).__name__, e, stmt.strip())
        return None
    finally:
        db.close()


def run_sql(blocks: List[Block], report: Report) -> None:
    for b in blocks:
        report_checked(b, sql_run(b), report, "parsed only", "it ran")


# ---- Rust ---------------------------------------------------------------------


def rust_bin_name(b: Block) -> str:
    return "doc_%s_%d" % (re.sub(r"[^A-Za-z0-9]+", "_", b.file).strip("_").lower(), b.line)


def rust_crate(blocks: List[Block], connect: str, crate: Path) -> Path:
    """Writes ``crate`` (target/doctest/rust): a crate of its own (own
    workspace, the workspace's Cargo.lock and profiles) with one binary per
    block; line N of its source is line N of the block."""
    src = crate / "src" / "bin"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    # The workspace's lock: the same versions, and nothing to fetch (the
    # crate's own entry is all cargo adds).
    shutil.copyfile(ROOT / "Cargo.lock", crate / "Cargo.lock")
    root_toml = tomllib.loads((ROOT / "Cargo.toml").read_text())
    # tokio as zklock-core has it (the runtime, macros, time, sync, net).
    tokio = tomllib.loads((ROOT / "zklock-core/Cargo.toml").read_text())["dependencies"]["tokio"]
    tokio_spec = '{ version = "%s", features = %s }' % (tokio["version"], json.dumps(tokio.get("features", [])))
    patches = "\n".join(
        '%s = { path = "%s" }' % (k, ROOT / v["path"])
        for k, v in root_toml.get("patch", {}).get("crates-io", {}).items()
    )
    profiles = ""
    for name, settings in root_toml.get("profile", {}).items():
        profiles += "[profile.%s]\n%s\n" % (
            name,
            "\n".join("%s = %s" % (k, json.dumps(v)) for k, v in settings.items()),
        )
    (crate / "Cargo.toml").write_text(
        """# Generated by tests/docs/doctest.py: the Rust blocks of the docs, one binary each.
[package]
name = "zklock-doctest"
version = "0.0.0"
edition = "%s"
publish = false

[workspace]

[dependencies]
zklock-core = { path = "%s" }
tokio = %s

[patch.crates-io]
%s

%s"""
        % (root_toml["workspace"]["package"]["edition"], ROOT / "zklock-core", tokio_spec, patches, profiles)
    )
    for b in blocks:
        code = b.source(connect)
        if not re.search(r"^\s*(pub\s+)?(async\s+)?fn\s+main\s*\(", code, re.M):
            code = "fn main() { %s}\n" % code  # as rustdoc does (on the same line: line numbers kept)
        (src / (rust_bin_name(b) + ".rs")).write_text("%s\n// %s\n" % (code, b.name))
    return crate


def run_rust(blocks: List[Block], connect: str, crate: Path, scratch: Scratch, report: Report) -> None:
    if not blocks:
        return
    crate = rust_crate(blocks, connect, crate)
    started = time.monotonic()
    proc = subprocess.run(
        ["cargo", "build", "--bins", "--keep-going", "--message-format=json-diagnostic-rendered-ansi"],
        cwd=crate,
        env=dict(os.environ, CARGO_TARGET_DIR=str(TARGET), CARGO_TERM_COLOR="never"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    report.notes.append("rust blocks: built in %.0f s" % (time.monotonic() - started))
    errors: Dict[str, List[str]] = {}
    exes: Dict[str, str] = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        name = msg.get("target", {}).get("name", "")
        if msg.get("reason") == "compiler-message" and msg["message"]["level"] == "error":
            errors.setdefault(name, []).append(re.sub(r"\x1b\[[0-9;]*m", "", msg["message"]["rendered"]))
        elif msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            exes[name] = msg["executable"]
    for b in blocks:
        name = rust_bin_name(b)
        if name not in exes:
            diag = "\n".join(errors.get(name, [])) or proc.stderr[-4000:]
            report.add(
                b,
                b.name,
                False,
                "does not compile (as %s/src/bin/%s.rs; its line N is line %d+N of %s)\n%s"
                % (crate, name, b.line, b.file, diag),
            )
        elif b.mode == "skip-run":
            report.add(b, b.name + " (skip-run: compiled only)", True)
        else:
            rc, out = run([exes[name]], scratch.new())
            judge(b, b.name, rc, out, report)


# ---- Main ---------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--only", action="append", default=[], help="FILE, FILE:LINE or a language; more than once for more"
    )
    ap.add_argument(
        "--wheel", help="the zklock-rs wheel for the Python blocks (default: the newest in target/doctest/wheels)"
    )
    ap.add_argument("--rust-crate", default=str(WORK / "rust"), help="where the Rust blocks' crate is generated")
    ap.add_argument("--list", action="store_true", help="list the blocks and exit")
    ap.add_argument(
        "--texts", default=str(ROOT), help="the directory with README.md and docs/ (default: the repository)"
    )
    args = ap.parse_args()

    connect = os.environ.get("ZKLOCK_TEST_CONNECT")
    if not connect and not args.list:
        with_zk = ROOT / "zklock-ffi/tests/c/with-zk.sh"
        os.execv(str(with_zk), [str(with_zk), sys.executable, *sys.argv])
    started = time.monotonic()
    report = Report()
    texts = Path(args.texts).resolve()
    files = markdown_files(texts)
    problems = Report(echo=False)
    blocks = extract(texts, files, problems)

    def picked(label: str) -> bool:
        """Whether a block or problem labelled "file:line lang ..." is selected."""
        where = label.split()[0]
        lang = label.split()[1] if len(label.split()) > 1 else ""
        return not args.only or any(o in (where.split(":")[0], where, lang) for o in args.only)

    blocks = [b for b in blocks if picked(b.name)]
    for p in problems.results:
        if picked(p.label):
            report.add(None, p.label, p.ok, p.detail)
    if args.list:
        for b in blocks:
            print(b.name + ("" if b.mode == "run" else " (%s: %s)" % (b.mode, b.arg)))
        return 0
    assert connect is not None
    print(
        "doctest: %d blocks in %d files (README.md, docs/**/*.md of %s) against ZooKeeper at %s"
        % (len(blocks), len(files), texts, connect),
        flush=True,
    )
    by = {lang: [b for b in blocks if b.lang == lang] for lang in CHECKED}
    scratch = Scratch()
    try:
        run_toml(by["toml"], report)
        run_sql(by["sql"], report)
        run_rust(by["rust"], connect, Path(args.rust_crate).resolve(), scratch, report)
        run_c(by["c"], connect, scratch, report)
        run_sh(by["sh"], connect, scratch, report)
        run_python(by["python"], connect, find_wheel(args.wheel) if by["python"] else Path(), scratch, report)
        run_js(by["js"], connect, scratch, report)
    finally:
        scratch.close()
    failed = [r for r in report.results if not r.ok]
    if report.notes:
        print("\ndoctest: " + "; ".join(report.notes))
    print(
        "doctest: %d passed, %d failed (%d checks in %.0f s, %s)"
        % (
            len(report.results) - len(failed),
            len(failed),
            len(report.results),
            time.monotonic() - started,
            platform.machine(),
        )
    )
    for r in failed:
        print("  FAIL " + r.label)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
