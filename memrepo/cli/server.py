"""The resident server: the other end of :mod:`memrepo.cli.client`.

One process per user, install and environment (the code stamp), answering the per-turn
commands (``options.PER_TURN``) one at a time with the caller's working directory, environment,
umask and file descriptors 0-2, through the same typer app a process would run
(:func:`memrepo.cli.app.main`), and keeping a few vaults warm between calls. Started by the
client as ``python -P -m memrepo.cli.server SOCKET STAMP``; it exits when idle, when its code
changes and when its socket file goes.
"""
from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

from memrepo import api
from memrepo.cli.client import (
    BUSY_WAIT,
    IDLE_DEFAULT,
    IDLE_ENV,
    Receiver,
    environment,
    listening,
    package,
    peer,
    send,
    stamp,
)

MAX_VAULTS = 4  # kept open between calls, least recently used closed first


class _Stop(Exception):
    """A client asked the server to stop."""


class _Terminated(BaseException):
    """SIGTERM between calls: stop now."""


class Vaults:
    """The vaults a server keeps open between calls, by root: at most MAX_VAULTS (the least
    recently used is closed first), and none whose folder is gone or was replaced (a vault
    removed and made again is opened anew). Each call finds its vault as a new process would
    (and finishes a write a killed process left). A vault let go is released whole: its
    catalog, index searcher, statistics and vectors, so no file of it stays open."""

    def __init__(self) -> None:
        self._open: dict[Any, tuple[api.Vault, tuple | None]] = {}

    def open(self, explicit: str | None) -> _Kept:
        root = api.find_root(None, explicit)
        self.sweep()
        vault, known = self._open.pop(root, (None, None))
        mark = _mark(root)
        if vault is not None and known != mark:
            _release(vault)
            vault = None
        if vault is None:
            vault = api.Vault(root)
        self._open[root] = (vault, mark)
        while len(self._open) > MAX_VAULTS:
            _release(self._open.pop(next(iter(self._open)))[0])
        vault.refresh()
        vault.recover_if_interrupted()
        return _Kept(vault)

    def sweep(self) -> None:
        """Let go of every vault whose folder is gone or is another folder now."""
        for root, (vault, mark) in list(self._open.items()):
            if _mark(root) != mark:
                del self._open[root]
                _release(vault)

    def roots(self) -> list[str]:
        return [str(root) for root in self._open]

    def close(self) -> None:
        for vault, _ in self._open.values():
            _release(vault)
        self._open.clear()


def _mark(root) -> tuple | None:
    """The identity of a vault's folder and its repository (None when either is gone)."""
    try:
        return os.stat(root).st_ino, os.stat(os.path.join(root, ".git")).st_ino
    except OSError:
        return None


def _release(vault: api.Vault) -> None:
    api.release(vault)
    vault.close()


class _Kept:
    """A kept vault as ``with`` gives it to a command: left open afterwards."""

    def __init__(self, vault: api.Vault):
        self.vault = vault

    def __enter__(self) -> api.Vault:
        return self.vault

    def __exit__(self, *exc: object) -> None:
        return None


class Server:
    """One server: a listening socket and the state it keeps warm."""

    def __init__(self, path: str, code_stamp: str):
        self.path, self.stamp = path, code_stamp
        self.vaults = Vaults()
        self.requests = 0   # calls answered
        self.fallbacks = 0  # calls handed back to run in-process (the caller's folder was gone)
        self.started = time.time()
        self.last = time.monotonic()  # the end of the last call (a status or stop is not a call)
        self.idle = _idle_setting()
        self.in_call = False
        self.terminating = False  # SIGTERM during a call: exit once it is done (a write is never cut)
        self.sock: socket.socket | None = None
        self.inode: int | None = None

    def listen(self) -> None:
        """Bind a temporary name, then rename it over the socket path (replacing a dead
        server's file); a live server already there wins and this one gives up."""
        if listening(self.path):
            raise _Stop
        tmp = os.path.join(os.path.dirname(self.path), f"t{os.getpid()}.tmp")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        self.sock.bind(tmp)
        os.chmod(tmp, 0o600)
        self.sock.listen(64)
        os.rename(tmp, self.path)
        self.inode = os.stat(self.path).st_ino

    def mine(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def loop(self) -> None:
        assert self.sock is not None
        self.sock.settimeout(1.0)
        try:
            while True:
                try:
                    conn, _ = self.sock.accept()
                except TimeoutError:
                    if not self.mine() or stamp() != self.stamp or self.idle_too_long():
                        return
                    self.vaults.sweep()
                    continue
                if self.handle(conn):
                    self.last = time.monotonic()
                if self.terminating or self.idle_too_long():  # (asked for its status, it still exits)
                    return
        except _Stop:
            return
        finally:
            self.shut()

    def idle_too_long(self) -> bool:
        return time.monotonic() - self.last >= self.idle

    def shut(self) -> None:
        """Remove the socket file (if still ours), answer the calls already queued, close."""
        if self.sock is None:
            return
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if self.mine():
            _discard(self.path)
        self.sock.setblocking(False)
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                break
            conn.setblocking(True)
            try:
                self.handle(conn)
            except _Stop:
                pass
        self.sock.close()
        self.sock = None
        self.vaults.close()

    def status(self) -> dict:
        times = os.times()
        return {"pid": os.getpid(), "socket": self.path, "requests": self.requests, "fallbacks": self.fallbacks,
                "started": round(self.started, 3), "idle_seconds": round(time.monotonic() - self.last, 3),
                "cpu_seconds": round(time.process_time(), 6),  # its own, and its finished git processes':
                "children_cpu_seconds": round(times.children_user + times.children_system, 6),
                "idle_exit": self.idle, "package": package(), "environment": environment(),
                "python": sys.executable, "vaults": self.vaults.roots()}

    def handle(self, conn: socket.socket) -> bool:
        """Answer one connection; True when it was a call (which resets the idle timer)."""
        fds: list[int] = []
        try:
            with conn:
                _pid, uid = peer(conn)
                if uid != os.getuid():
                    return False
                conn.settimeout(10.0)
                receiver = Receiver(conn)
                request, _ = receiver.receive()
                conn.settimeout(None)
                op = request.get("op") if request else None
                if op == "status":
                    send(conn, self.status())
                elif op == "stop":
                    send(conn, self.status())
                    raise _Stop
                elif op == "run" and request is not None:
                    if request.get("stamp") != self.stamp:
                        send(conn, {"stale": True})
                        return False
                    send(conn, {"ready": True})
                    conn.settimeout(BUSY_WAIT + 10.0)
                    go, fds = receiver.receive(max_fds=3)
                    if not go or not go.get("go") or len(fds) != 3:
                        return False  # the client stopped waiting and runs the call itself
                    conn.settimeout(None)
                    code = self.run(request, fds)
                    if code is None:
                        self.fallbacks += 1
                    else:
                        self.requests += 1
                    send(conn, {"fallback": True} if code is None else {"code": code})
                    return True
        except (OSError, ValueError, EOFError, KeyError, TypeError):
            return False  # the client went away or sent something else: nothing to answer
        finally:
            for fd in fds:
                os.close(fd)
        return False

    def run(self, request: dict, fds: list[int]) -> int | None:
        """One call, with the caller's working directory, environment, umask and fds 0-2;
        None when it must run in the caller's process (its folder is gone)."""
        from memrepo.cli import app, call
        saved = [os.dup(i) for i in range(3)]
        streams, env, argv = (sys.stdin, sys.stdout, sys.stderr), dict(os.environ), sys.argv
        umask = os.umask(request["umask"])
        code: int | None = None
        try:
            os.chdir(request["cwd"])
        except OSError:  # the caller's folder is gone: in-process, it reports that itself
            os.umask(umask)
            return None
        try:
            for i, fd in enumerate(fds):
                os.dup2(fd, i)
            _replace_environ(request["env"])
            sys.argv = request["argv"]
            sys.stdin, sys.stdout, sys.stderr = (_stream(i, spec) for i, spec in enumerate(request["stdio"]))
            forget_per_call_state()
            call.state.vaults = self.vaults
            self.in_call = True
            try:
                code = app.main(request["argv"][1:])
            finally:
                self.in_call = False
        except KeyboardInterrupt:
            code = 130
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except Exception:  # noqa: BLE001 — as an uncaught error in-process: the traceback, exit 1
            import traceback
            traceback.print_exc()
            code = 1
        finally:
            call.state.vaults = None
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError, AttributeError):
                    pass
            sys.stdin, sys.stdout, sys.stderr = streams
            sys.argv = argv
            for i, fd in enumerate(saved):
                os.dup2(fd, i)
                os.close(fd)
            os.chdir("/")
            _replace_environ(env)
            os.umask(umask)
            time.tzset()
        return code

    def interrupt(self, signum, frame) -> None:
        """SIGINT (passed on by a client on Ctrl-C) interrupts a call, and nothing else."""
        if self.in_call:
            raise KeyboardInterrupt

    def terminate(self, signum, frame) -> None:
        """SIGTERM: stop now between calls, or once the current call is done."""
        if self.in_call:
            self.terminating = True
        else:
            raise _Terminated


def _idle_setting() -> float:
    try:
        return float(os.environ.get(IDLE_ENV) or IDLE_DEFAULT)
    except ValueError:
        return IDLE_DEFAULT


def _replace_environ(env: dict[str, str]) -> None:
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
    time.tzset()


def _stream(fd: int, spec: list):
    """A text stream on ``fd`` set up as the caller's Python set up its own (encoding, errors,
    buffering), as sys.stdin/stdout/stderr are."""
    import io
    encoding, errors, line_buffering, write_through = spec
    raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
    buffered: io.BufferedIOBase = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, newline="\n",
                            line_buffering=line_buffering, write_through=write_through)


def forget_per_call_state() -> None:
    """Caches a new process would not have, which depend on the environment or on files that
    may have changed since the last call: git's identity and paths, tempfile's folder."""
    api.forget_process_caches()


def warm_up() -> None:
    """Build what the per-turn commands use before listening (the calls meanwhile run in-process):
    the typer app with those commands, and the model with the semantic layer on."""
    from memrepo.cli import app, options
    for name in options.PER_TURN:
        app.command_for(name)
    api.warm_up()


def serve(path: str, code_stamp: str) -> int:
    """The server's life: check it runs the code it was started for, warm up, listen, answer
    calls until idle, replaced or stopped; its socket file is removed on the way out."""
    import signal
    marker = path + ".start"
    server = None
    try:
        os.chdir("/")
        if stamp() != code_stamp:
            return 1
        server = Server(path, code_stamp)
        signal.signal(signal.SIGINT, server.interrupt)
        signal.signal(signal.SIGTERM, server.terminate)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        warm_up()
        try:
            server.listen()
        except _Stop:
            return 0
        finally:
            _discard(marker)  # listening (or not starting): the start marker has done its work
        server.loop()
        return 0
    except _Terminated:
        if server is not None:
            server.shut()
        return 0
    finally:
        _discard(marker)


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


if __name__ == "__main__":
    from memrepo.cli import server as module  # the importable module, not this __main__ copy
    sys.exit(module.serve(sys.argv[1], sys.argv[2]))
