"""memrepo.store.processes: the one module that starts child processes (git's aside)."""
from __future__ import annotations

import os
import sys
import time

import pytest

from memrepo.store import processes


def test_a_python_child_imports_this_memrepo(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    env = processes.importable_env()
    assert env["PYTHONPATH"].split(os.pathsep) == [processes.PACKAGE_PARENT, str(tmp_path)]
    import memrepo
    assert os.path.dirname(os.path.dirname(os.path.abspath(memrepo.__file__))) == processes.PACKAGE_PARENT


def test_a_piped_child_answers_and_ends_when_its_input_closes():
    proc = processes.start_piped("-c", "import sys, memrepo; sys.stdout.buffer.write(sys.stdin.buffer.read(3)); "
                                       "sys.stdout.buffer.write(memrepo.__name__.encode())")
    assert proc is not None
    proc.stdin.write(b"abc")
    processes.stop(proc)   # closes its input: it finishes and is waited for
    assert proc.returncode == 0


def test_a_detached_child_has_its_own_session(tmp_path):
    out = tmp_path / "sid"
    processes.start_detached("-c", f"import os; open({str(out)!r}, 'w').write(str(os.getsid(0)))")
    deadline = time.monotonic() + 30
    while not (out.exists() and out.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert int(out.read_text()) != os.getsid(0)


def test_a_forked_worker_runs_with_its_arguments_shared():
    recv, send = processes.one_way_pipe()
    shared = {"not": "pickled"}
    proc = processes.fork(lambda conn, obj: conn.send(id(obj) == id(shared)), (send, shared))
    assert recv.recv() is True
    proc.join(10)


def test_only_the_named_programs_run():
    for program in ("git", sys.executable, "sh"):
        with pytest.raises(ValueError, match="does not run"):
            processes.run(program, "--version")
