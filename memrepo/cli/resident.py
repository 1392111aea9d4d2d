"""The background server's side of :mod:`memrepo.cli.daemon`: one process per user and code
stamp, answering ``search``, ``recall``, ``context`` and ``add`` calls one at a time with the caller's
working directory, environment, umask and file descriptors 0-2, and keeping the vaults it
opened warm between calls. Started by the client as ``python -P -m memrepo.cli.resident
SOCKET STAMP``; it exits when idle, when its code changes and when its socket file goes.
"""
from __future__ import annotations

import os
import sys

from memrepo.cli.daemon import BUSY_WAIT, IDLE_DEFAULT, IDLE_ENV, Receiver, listening, peer, send, stamp

MAX_VAULTS = 8


class _Stop(Exception):
    """A client asked the server to stop."""


class _Terminated(BaseException):
    """SIGTERM between calls: stop now."""


class Vaults:
    """The vaults a server keeps open between calls, by root (at most MAX_VAULTS, least
    recently used closed first). Each call finds its vault as a new process would (and
    finishes a write a killed process left); a vault removed and made again is opened anew."""

    def __init__(self):
        self._open: dict = {}

    def open(self, explicit: str | None):
        from memrepo.store.vault import MARKER, Vault, find_root
        root = find_root(None, explicit)
        try:
            mark = (os.stat(root / MARKER).st_ino, os.stat(root / ".git").st_ino)
        except OSError:
            mark = None
        vault, known = self._open.pop(root, (None, None))
        if vault is not None and known != mark:
            vault.close()
            vault = None
        if vault is None:
            vault = Vault(root)
        self._open[root] = (vault, mark)
        while len(self._open) > MAX_VAULTS:
            self._open.pop(next(iter(self._open)))[0].close()
        vault.refresh()
        vault.recover_if_interrupted()
        return _Kept(vault)

    def close(self) -> None:
        for vault, _ in self._open.values():
            vault.close()
        self._open.clear()


class _Kept:
    """A kept vault as ``with`` gives it to a command: left open afterwards."""

    def __init__(self, vault):
        self.vault = vault

    def __enter__(self):
        return self.vault

    def __exit__(self, *exc) -> None:
        return None


class Server:
    """One server: a listening socket and the state it keeps warm."""

    def __init__(self, path: str, code_stamp: str):
        import time
        self.path, self.stamp = path, code_stamp
        self.vaults = Vaults()
        self.requests = 0   # calls answered
        self.fallbacks = 0  # calls handed back to run in-process (typer's usage errors)
        self.started = time.time()
        self.last = time.monotonic()
        self.idle = _idle_setting()
        self.in_call = False
        self.terminating = False  # SIGTERM during a call: exit once it is done (a write is never cut)
        self.sock = None
        self.inode = None

    def listen(self) -> None:
        """Bind a temporary name, then rename it over the socket path (replacing a dead
        server's file); a live server already there wins and this one gives up."""
        import socket
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
        import time
        self.sock.settimeout(1.0)
        try:
            while True:
                try:
                    conn, _ = self.sock.accept()
                except TimeoutError:
                    if not self.mine() or stamp() != self.stamp or time.monotonic() - self.last >= self.idle:
                        return
                    continue
                self.handle(conn)
                self.last = time.monotonic()
                if self.terminating:
                    return
        except _Stop:
            return
        finally:
            self.shut()

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
        import time
        return {"pid": os.getpid(), "socket": self.path, "requests": self.requests, "fallbacks": self.fallbacks,
                "started": round(self.started, 3), "idle_seconds": round(time.monotonic() - self.last, 3),
                "cpu_seconds": round(time.process_time(), 6),  # its own, and its finished git processes':
                "children_cpu_seconds": round(os.times().children_user + os.times().children_system, 6),
                "idle_exit": self.idle, "python": sys.executable,
                "package": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}

    def handle(self, conn) -> None:
        fds: list[int] = []
        try:
            with conn:
                _pid, uid = peer(conn)
                if uid != os.getuid():
                    return
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
                elif op == "run":
                    if request.get("stamp") != self.stamp:
                        send(conn, {"stale": True})
                        return
                    send(conn, {"ready": True})
                    conn.settimeout(BUSY_WAIT + 10.0)
                    go, fds = receiver.receive(max_fds=3)
                    if not go or not go.get("go") or len(fds) != 3:
                        return  # the client stopped waiting and runs the call itself
                    conn.settimeout(None)
                    code = self.run(request, fds)
                    if code is None:
                        self.fallbacks += 1
                    else:
                        self.requests += 1
                    send(conn, {"fallback": True} if code is None else {"code": code})
        except (OSError, ValueError, EOFError, KeyError, TypeError):
            return  # the client went away or sent something else: nothing to answer
        finally:
            for fd in fds:
                os.close(fd)

    def run(self, request: dict, fds: list[int]) -> int | None:
        """One call, with the caller's working directory, environment, umask and fds 0-2."""
        import time

        from memrepo.cli import commands, fast
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
            commands.state.vaults = self.vaults
            self.in_call = True
            try:
                code = fast.run(request["argv"][1:])
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
            commands.state.vaults = None
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
    import time
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
    buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, newline="\n",
                            line_buffering=line_buffering, write_through=write_through)


def forget_per_call_state() -> None:
    """Caches a new process would not have, which depend on the environment or on files that
    may have changed since the last call: git's identity and paths, tempfile's folder."""
    git = sys.modules.get("memrepo.store.git")
    if git is not None:
        for cached in (git.identity, git.git_path, git.common_dir):
            cached.cache_clear()
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None


def warm_up() -> None:
    """Import what the served commands use, before listening (the calls meanwhile run in-process)."""
    import importlib
    for name in ("memrepo.cli.fast", "memrepo.cli.commands", "memrepo.cli.output", "memrepo.store.vault",
                 "memrepo.retrieval.search", "memrepo.agents.recall", "memrepo.agents.context",
                 "memrepo.agents.transcript", "memrepo.team.scopes", "memrepo.review.writes"):
        importlib.import_module(name)
    from memrepo.retrieval import embed, search
    if os.environ.get(search.SEMANTIC_ENV, "1").strip().lower() not in ("0", "false", "no", "off") and embed.available():
        importlib.import_module("memrepo.retrieval.vectors")
        embed.model_id()
        embed.shared(embed.user_cache_dir()).query("warm up")


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
    from memrepo.cli import resident  # the importable module, not this __main__ copy
    sys.exit(resident.serve(sys.argv[1], sys.argv[2]))
