"""Tests of the docs' block runner (tests/docs/doctest.py): that it fails a
block that fails, names every block as file:line and language, and enforces
the directives. Each test writes a README.md and docs/ of its own and runs the
runner on them (``--texts``) as ``make test-docs`` does, against a real
ZooKeeper from the harness where a block talks to one.

Run: ``target/python-venv/bin/python -m pytest tests/docs`` (after
``make test-docs`` has built the CLI, libzklock, the addon and the wheel).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import pytest

RUNNER = Path(__file__).resolve().parent / "doctest.py"


def fence(lang: str, code: str, directive: Optional[str] = None) -> str:
    head = "<!-- doctest: %s -->\n" % directive if directive is not None else ""
    return "%s```%s\n%s```\n" % (head, lang, textwrap.dedent(code))


def run_docs(tmp_path: Path, readme: str, docs: Optional[Dict[str, str]] = None, *args: str, **env: str):
    """Runs the runner on a README.md (and docs/NAME files) of ``tmp_path``;
    the CompletedProcess (stdout and stderr together in stdout)."""
    (tmp_path / "README.md").write_text(readme)
    for name, text in (docs or {}).items():
        (tmp_path / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / name).write_text(text)
    return subprocess.run(
        [sys.executable, str(RUNNER), "--texts", str(tmp_path), *args],
        env=dict(os.environ, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )


def fences(text: str) -> List[int]:
    """The line numbers (from 1) of the opening fences of ``text``."""
    starts, inside = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if not inside:
                starts.append(i)
            inside = not inside
    return starts


def results(out: str) -> Dict[str, str]:
    """{label: "ok"|"FAIL"} of the runner's result lines."""
    return {m.group(2): m.group(1).strip() for m in re.finditer(r"^(ok  |FAIL) (.*)$", out, re.M)}


def test_sh_blocks_run_against_the_server_and_directives_hold(tmp_path: Path) -> None:
    readme = (
        "# t\n\n"
        + fence("sh", "export ZKLOCK_HOSTS=127.0.0.1:2181\nzklock run /doctest/sh -- true\n")
        + "\n"
        + fence("sh", "exit 3\n")
        + "\n"
        + fence("sh", "echo boom >&2; exit 1\n", "fails: boom")
        + "\n"
        + fence("sh", "echo bang >&2; exit 1\n", "fails: boom")
        + "\n"
        + fence("sh", "true\n", "fails: boom")
        + "\n"
        + fence("sh", "make everything\n", "skip-run: needs the repository")
        + "\n"
        + fence("sh", "if then fi\n", "skip-run: a syntax error")
        + "\n"
        + fence("sh", "echo 127.0.0.1:2181; exit 1\n", "fails: 127.0.0.1:2181")
        + "\n"
        + "\n"
        + fence("sh", 'test -z "${ZKLOCK_HOSTS-}${ZKLOCK_TEST_CONNECT-}"\n')
        + "\n"
        + fence("text", "not code\n")
    )
    at = fences(readme)
    # The runner's own ZKLOCK_* settings do not reach the blocks.
    proc = run_docs(tmp_path, readme, None, ZKLOCK_HOSTS="127.0.0.1:1")
    r = results(proc.stdout)
    assert proc.returncode == 1, proc.stdout
    assert r == {
        "README.md:%d sh" % at[0]: "ok",
        "README.md:%d sh" % at[1]: "FAIL",
        "README.md:%d sh" % at[2]: "ok",
        "README.md:%d sh" % at[3]: "FAIL",
        "README.md:%d sh" % at[4]: "FAIL",
        "README.md:%d sh (skip-run: checked only)" % at[5]: "ok",
        "README.md:%d sh" % at[6]: "FAIL",
        # The connect string was replaced: the output has the server's, not the doc's.
        "README.md:%d sh" % at[7]: "FAIL",
        "README.md:%d sh" % at[8]: "ok",
    }, proc.stdout
    assert "exited with 3" in proc.stdout
    assert "without 'boom' in its output" in proc.stdout
    assert "marked fails: 'boom', but exited with 0" in proc.stdout


def test_blocks_without_a_language_or_with_bad_directives_are_errors(tmp_path: Path) -> None:
    readme = (
        "# t\n\n"
        + fence("", "what language?\n")
        + "\n"
        + fence("ruby", "puts 1\n")
        + "\n"
        + fence("sh", "true\n", "skip-run:")
        + "\n"
        + fence("sh", "true\n", "sometimes: maybe")
        + "\n<!-- doctest: skip-run: nothing follows -->\n\nprose\n\n"
        + "    indented code\n\n"
        + "```{toctree}\nnot checked\n```\n"
    )
    proc = run_docs(tmp_path, readme, {"guides/x.md": "# x\n\n" + fence("sh", "exit 4\n")})
    r = results(proc.stdout)
    assert proc.returncode == 1, proc.stdout
    assert r == {
        "README.md:3": "FAIL",
        "README.md:7 ruby": "FAIL",
        "README.md:12 sh": "FAIL",
        "README.md:17 sh": "FAIL",
        "README.md:21": "FAIL",
        "README.md:25": "FAIL",
        # docs/**/*.md is found by the glob.
        "docs/guides/x.md:3 sh": "FAIL",
    }, proc.stdout
    assert "a fence without a language" in proc.stdout
    assert "unknown language 'ruby'" in proc.stdout
    assert "not on the line right before a fence" in proc.stdout
    assert "an indented code block" in proc.stdout


def test_a_block_that_hangs_is_ended_and_named(tmp_path: Path) -> None:
    proc = run_docs(tmp_path, "# t\n\n" + fence("sh", "sleep 120\n"), None, ZKLOCK_DOCTEST_TIMEOUT="2")
    assert proc.returncode == 1, proc.stdout
    assert "FAIL README.md:3 sh\n    | timed out after 2 s (killed)" in proc.stdout


def test_toml_and_sql(tmp_path: Path) -> None:
    readme = (
        "# t\n\n"
        + fence("toml", '[dependencies]\nzklock-core = "0.1"\n')
        + "\n"
        + fence("toml", '[dependencies]\nzklock-core = "0.2"\n')
        + "\n"
        + fence("toml", '[dependencies]\nzklock = "0.1"\n')
        + "\n"
        + fence("toml", "not = toml = at all\n")
        + "\n"
        + fence("sql", "CREATE TABLE t (k, token);\nUPDATE t SET token = :token WHERE k = :k AND token <= :token;\n")
        + "\n"
        + fence("sql", "UPDATE resource SET token = :token;\n")
        + "\n"
        + fence("sql", "UPDATE resource SET token = :token;\n", "skip-run: a fragment")
        + "\n"
        + fence("sql", "UPDATE SET;\n", "skip-run: a fragment")
    )
    at = fences(readme)
    proc = run_docs(tmp_path, readme)
    r = results(proc.stdout)
    assert r == {
        "README.md:%d toml" % at[0]: "ok",
        "README.md:%d toml" % at[1]: "FAIL",
        "README.md:%d toml" % at[2]: "FAIL",
        "README.md:%d toml" % at[3]: "FAIL",
        "README.md:%d sql" % at[4]: "ok",
        "README.md:%d sql" % at[5]: "FAIL",
        "README.md:%d sql (skip-run: parsed only)" % at[6]: "ok",
        "README.md:%d sql" % at[7]: "FAIL",
    }, proc.stdout
    assert "does not accept the workspace's version" in proc.stdout
    assert "no such table: resource" in proc.stdout
    assert "zklock: no crate of this workspace is called that" in proc.stdout
    assert "not TOML" in proc.stdout


def test_c_python_and_js_blocks_run_on_every_claimed_version(tmp_path: Path) -> None:
    readme = (
        "# t\n\n"
        + fence(
            "c",
            """\
            #include <zklock.h>
            int main(void) {
                zklock_client *zk = NULL;
                if (zklock_client_new("127.0.0.1:2181", NULL, &zk, NULL) != ZKLOCK_OK) return 1;
                zklock_client_free(zk);
                return 0;
            }
            """,
        )
        + "\n"
        + fence("c", "int main(void) { int unused; return 0; }\n")
        + "\n"
        + fence(
            "python",
            """\
            import zklock
            with zklock.Client("127.0.0.1:2181") as zk:
                with zk.lock("/doctest/py", timeout=10) as lock:
                    raise SystemExit("held %d" % lock.fencing_token)
            """,
            "fails: held ",
        )
        + "\n"
        + fence(
            "js",
            """\
            const { Client } = require('zklock')
            async function main() {
              const client = await Client.connect({ hosts: '127.0.0.1:2181' })
              await client.withLock('/doctest/js', async () => {})
              await client.close()
              process.exit(5)
            }
            main()
            """,
        )
    )
    at = fences(readme)
    proc = run_docs(tmp_path, readme)
    r = results(proc.stdout)
    assert r["README.md:%d c" % at[0]] == "ok", proc.stdout
    assert r["README.md:%d c" % at[1]] == "FAIL", proc.stdout  # -Werror: an unused variable
    pythons = sorted(k for k in r if k.startswith("README.md:%d python [Python " % at[2]))
    assert [re.sub(r"^.*\[Python (3\.\d+)\.\d+\]$", r"\1", k) for k in pythons] == ["3.13", "3.9"], proc.stdout
    assert all(r[k] == "ok" for k in pythons), proc.stdout
    nodes = sorted(k for k in r if k.startswith("README.md:%d js [Node " % at[3]))
    assert [re.sub(r"^.*\[Node (v\d+)\..*$", r"\1", k) for k in nodes] == ["v18", "v20", "v22"], proc.stdout
    assert all(r[k] == "FAIL" for k in nodes), proc.stdout  # exit 5, after a lock on the real server


@pytest.mark.skipif(os.environ.get("ZKLOCK_DOCTEST_SKIP_RUST") == "1", reason="ZKLOCK_DOCTEST_SKIP_RUST=1")
def test_rust_blocks_are_built_and_run(tmp_path: Path) -> None:
    readme = (
        "# t\n\n"
        + fence(
            "rust",
            """\
            use zklock_core::{Client, ClientOptions};
            fn main() -> Result<(), Box<dyn std::error::Error>> {
                let client = Client::connect(ClientOptions::new("127.0.0.1:2181"))?;
                let guard = client.lock("/doctest/rust")?.acquire(None)?;
                guard.release()?;
                Ok(())
            }
            """,
        )
        + "\n"
        + fence("rust", 'let x: u32 = "not a number";\n')
        + "\n"
        + fence("rust", "fn main() { std::process::exit(7) }\n", "fails: never printed")
    )
    at = fences(readme)
    proc = run_docs(tmp_path, readme, None, "--rust-crate", str(tmp_path / "crate"))
    r = results(proc.stdout)
    assert r == {"README.md:%d rust" % n: v for n, v in zip(at, ["ok", "FAIL", "FAIL"])}, proc.stdout
    assert "its line N is line %d+N of README.md" % at[1] in proc.stdout
    assert "mismatched types" in proc.stdout
    assert "exited with 7 as marked, but without 'never printed'" in proc.stdout


def test_js_blocks_find_the_node_packages_peer_dependencies(tmp_path: Path) -> None:
    """A user of zklock/metrics installs prom-client (an optional peer
    dependency of zklock) beside zklock: a block finds it there too."""
    readme = "# t\n\n" + fence(
        "js",
        """\
        const { Registry } = require('prom-client')
        const { METRIC_NAMES } = require('zklock/metrics')
        console.log(new Registry().contentType, METRIC_NAMES.length)
        """,
    )
    at = fences(readme)
    proc = run_docs(tmp_path, readme)
    r = results(proc.stdout)
    nodes = [k for k in r if k.startswith("README.md:%d js [Node " % at[0])]
    assert nodes and all(r[k] == "ok" for k in nodes), proc.stdout
