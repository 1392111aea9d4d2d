"""Child processes: the one module that starts them (git's own are :mod:`memrepo.store.git`'s).

memrepo starts four kinds, all through the functions here:

* a detached Python process (own session, no terminal, no output): a background vector build
  (``python -m memrepo.retrieval.vectors_build``) and the resident CLI server;
* a Python child on pipes: the encoder's query and bulk workers (their protocol is
  :mod:`memrepo.retrieval.encoders`);
* a forked worker: the index builder's segment writers (:mod:`memrepo.retrieval.builder`);
* a program named in ``PROGRAMS`` (``crontab`` for the nightly schedule).

A Python child imports this very memrepo (:func:`importable_env`), not whatever another
install or the current folder would give it, and never runs the caller's script again (a
plain ``python -c`` or ``-m``, not multiprocessing's spawn: a script without a main guard
would run twice).
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

PROGRAMS = ("crontab",)   # programs other than Python and git that memrepo runs
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])   # the folder this memrepo is imported from


def importable_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with this memrepo first on ``PYTHONPATH``."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_PARENT, env.get("PYTHONPATH")]))
    return env


def _flags(interpreter_flags: bool) -> list[str]:
    """With ``interpreter_flags``, the flags this process was started with (``-X``, ``-W``,
    ``-O``, ...) and ``-P`` (the child's current folder is never searched for modules)."""
    if not interpreter_flags:
        return []
    return [arg for arg in subprocess._args_from_interpreter_flags() if arg != "-P"] + ["-P"]  # type: ignore[attr-defined]


def start_detached(*args: str, interpreter_flags: bool = False, cwd: str | None = None,
                   env: Mapping[str, str] | None = None) -> None:
    """Start ``python ARGS`` in its own session with no input or output: it outlives this
    process and no Ctrl-C of this terminal reaches it (``interpreter_flags``: see
    :func:`_flags`). Raises OSError when it cannot start."""
    subprocess.Popen([sys.executable, *_flags(interpreter_flags), *args], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd,
                     env=importable_env(env), start_new_session=True, close_fds=True)


def start_piped(*args: str) -> subprocess.Popen[bytes] | None:
    """``python ARGS`` with pipes for its stdin and stdout, unbuffered (``select`` then sees
    every byte not yet read), its stderr discarded; None when no process can be started."""
    try:
        return subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=importable_env(), bufsize=0)
    except OSError:
        return None


def stop(proc: subprocess.Popen[bytes] | None, *, grace: float = 0.5) -> None:
    """End a piped child: its stdin closed (its signal to end), killed after ``grace`` s."""
    if proc is None:
        return
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(grace)
    except Exception:
        proc.kill()
        proc.wait()
    try:
        if proc.stdout is not None:
            proc.stdout.close()
    except OSError:
        pass


def fork(target: Callable[..., None], args: Sequence[Any]) -> Any:
    """A started forked worker process running ``target(*args)`` (a daemon: it ends with this
    process). Forked, so ``args`` are shared as they are, not pickled."""
    import multiprocessing
    proc = multiprocessing.get_context("fork").Process(target=target, args=tuple(args), daemon=True)
    proc.start()
    return proc


def one_way_pipe() -> tuple[Any, Any]:
    """(receiving end, sending end) of a pipe for a forked worker."""
    import multiprocessing
    return multiprocessing.get_context("fork").Pipe(duplex=False)


def run(program: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run one of ``PROGRAMS`` to its end, its output captured as text. Raises
    FileNotFoundError when the program is not installed."""
    if program not in PROGRAMS:
        raise ValueError(f"memrepo does not run {program!r}")
    return subprocess.run([program, *args], input=input, capture_output=True, text=True)
