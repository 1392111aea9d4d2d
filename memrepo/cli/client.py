"""The client of the resident server, which answers the per-turn commands warm, and its controls.

A new process pays, on every call, for the interpreter, the imports (numpy and the vectors
module with the semantic layer on), the model, the index's searcher and the catalog; a process
that stays up pays for them once (the MCP server already works this way). So the console entry
point (:mod:`memrepo.cli.main`) first offers a per-turn command (``options.PER_TURN``) to a
per-user background server over a unix socket (:func:`call`) and, when none answers, runs the
call in-process and then starts one (:func:`start`), so the next call is warm.

This module is the client, the wire format and the controls (``memrepo daemon``); the server
is :mod:`memrepo.cli.server`. The client sends its argv, working directory, whole environment,
umask and how its Python set up stdin/stdout/stderr, and passes its file descriptors 0, 1 and 2
(``SCM_RIGHTS``): the server reads the caller's stdin and writes straight to its stdout and
stderr, so terminal detection, ``NO_COLOR``, pipes and ``| head`` behave as in-process. The
server serves one call at a time (the working directory, the environment and fds 0-2 are
process-wide), runs it with the same typer app (:func:`memrepo.cli.app.main`) and replies with
the exit code. Per call the server forgets every cache that depends on the environment (git's
identity, the vault's configuration, tempfile's directory, the time zone); it keeps the model
loaded and a few vaults open, with their catalog and index searcher, which catch up with git on
every call as the MCP server's do. A write (``add``) takes the vault's lock as in-process; a
server stopped with SIGTERM finishes the call under way first.

The socket's name carries a stamp of the code and its environment (the interpreter, the
package's folder and the modification times of its files, the interpreter's flags and
encodings), so an edited or reinstalled memrepo never talks to an old server: there is one
server per install and environment. A server exits when its code changes, when its socket file
is removed or replaced, and after ``MEMREPO_DAEMON_IDLE`` seconds (600) without a call (asking
its status is not a call). ``MEMREPO_DAEMON=0`` turns all of it off. The client imports only
cheap standard modules.
"""
from __future__ import annotations

import os
import sys

from memrepo.cli.options import PER_TURN, hoist_globals

WRITES = ("add",)  # killed during one of these, the call may or may not have written
ENV = "MEMREPO_DAEMON"
IDLE_ENV = "MEMREPO_DAEMON_IDLE"
RUNTIME_ENV = "MEMREPO_RUNTIME_DIR"
IDLE_DEFAULT = 600.0
STOPPED_CODE = 75  # "busy, retry later"
STOPPED_MESSAGE = "memrepo: the background server stopped during the call; run the command again"
START_STALE = 60.0  # s after which a start marker whose server never came up is ignored
SOCKET_MAX = 107    # bytes in a unix socket path (sun_path) on Linux, the NUL excluded

# What call() may answer besides an exit code.
STOPPED = "stopped"    # the server died during a write: what it wrote is looked up
ABSENT = "absent"      # no server: run in-process, then start one
FALLBACK = "fallback"  # a server runs but did not take the call: run it in-process
OFF = "off"            # not for the server (disabled, refused, unusable): run in-process
BUSY = "busy"          # the server was answering another call for BUSY_WAIT seconds: run in-process
BUSY_WAIT = 1.0


# ---------------------------------------------------------------- where, and which code

def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def eligible(argv: list[str]) -> str | None:
    """The per-turn command ``argv`` names when the server may answer it, else None."""
    if not enabled() or "--" in argv or "--help" in argv or any(k.startswith("_MEMREPO_COMPLETE") for k in os.environ):
        return None
    rest = hoist_globals(argv)[2]
    return rest[0] if rest and rest[0] in PER_TURN else None


def runtime_dir(*, create: bool = False) -> str | None:
    """``$MEMREPO_RUNTIME_DIR``, ``$XDG_RUNTIME_DIR/memrepo`` or ``/tmp/memrepo-$UID``: made
    with mode 0700; None when it is not a folder of ours that only we may write to."""
    path = os.environ.get(RUNTIME_ENV) or (os.path.join(os.environ["XDG_RUNTIME_DIR"], "memrepo")
                                            if os.environ.get("XDG_RUNTIME_DIR") else f"/tmp/memrepo-{os.getuid()}")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return None
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            st = os.lstat(path)
        except OSError:
            return None
    except OSError:
        return None
    import stat
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return path


def package() -> str:
    """This install: the folder of the memrepo package the client runs from."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_FLAGS = ("optimize", "dont_write_bytecode", "ignore_environment", "no_user_site", "isolated", "bytes_warning",
          "dev_mode", "utf8_mode", "warn_default_encoding")


def environment() -> dict:
    """What besides the install a server must share with its clients: the interpreter, the
    flags it started with (those set), the file-system and locale encodings."""
    import _locale
    return {"python": sys.executable, "flags": {name: getattr(sys.flags, name) for name in _FLAGS if getattr(sys.flags, name)},
            "filesystem_encoding": sys.getfilesystemencoding(), "locale_encoding": _locale.getencoding()}


def stamp() -> str:
    """What must match between a client and the server it talks to: the install (the
    package's folder and the modification times of its files, the installed packages'
    folders), the environment (:func:`environment`) and the user."""
    files, mtimes = 0, 0  # any file or folder touched, added or removed changes one of them
    folders = [package()]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(entry.path)
                        mtimes += entry.stat(follow_symlinks=False).st_mtime_ns
                elif entry.name.endswith(".py"):
                    files += 1
                    mtimes += entry.stat().st_mtime_ns
    site = []
    for p in sys.path:
        if p.endswith("-packages"):
            try:
                site.append([p, os.stat(p).st_mtime_ns])
            except OSError:
                pass
    env = environment()
    return repr([env["python"], package(), files, mtimes, site, sorted(env["flags"].items()),
                 env["filesystem_encoding"], env["locale_encoding"], os.getuid()])


def socket_path(code_stamp: str | None = None, *, create: bool = False) -> str | None:
    """The socket of the server for this code, or None when none can be used here."""
    folder = runtime_dir(create=create)
    if folder is None:
        return None
    import zlib
    data = (code_stamp or stamp()).encode()
    path = os.path.join(folder, f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}.sock")
    return path if len(os.fsencode(path)) + 12 <= SOCKET_MAX else None  # room for the server's temporary name


# ---------------------------------------------------------------- the client

def call(argv: list[str], command: str = "") -> int | str:
    """Run ``argv`` on the resident server: its exit code, or ABSENT / FALLBACK / OFF when the
    caller must run it in-process. Never raises for a missing, stale or refusing server."""
    import _socket  # not socket (+15 ms of imports per call); marshal, not json (+7 ms): same interpreter
    code_stamp = stamp()
    path = socket_path(code_stamp, create=True)
    if path is None or any(s is None for s in (sys.stdin, sys.stdout, sys.stderr)):
        return OFF
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            conn.connect(path)
            pid, uid = peer(conn)
        except OSError:
            return ABSENT
        if uid != os.getuid():
            return OFF
        umask = os.umask(0)
        os.umask(umask)
        request = {"op": "run", "stamp": code_stamp, "argv": [sys.argv[0] if sys.argv else "memrepo", *argv],
                   "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
                   "stdio": [[s.encoding, s.errors, s.line_buffering, getattr(s, "write_through", False)]
                             for s in (sys.stdin, sys.stdout, sys.stderr)]}
        try:
            send(conn, request)
        except OSError:
            return ABSENT
        return _outcome(conn, pid, writes=command in WRITES)
    except OSError:  # getcwd in a removed folder, a standard stream whose fd is closed...
        return OFF
    finally:
        conn.close()


def _outcome(conn, pid: int, *, writes: bool) -> int | str:
    """The server's answer. It says "ready" when it takes the call and runs it only on the
    client's "go", which carries fds 0-2: a client that stops waiting for a busy server
    (BUSY_WAIT) runs the call in-process, and it never runs twice nor leaves its stdout open in
    the server's queue (a shell's ``$(memrepo search ...)`` waits for that end of file). Once
    it runs, Ctrl-C is passed on to the server (the call answers 130)."""
    receiver = Receiver(conn)
    conn.settimeout(BUSY_WAIT)
    try:
        reply = receiver.receive()[0]
    except KeyboardInterrupt:
        return 130  # nothing ran
    except TimeoutError:
        return BUSY  # another call holds it (one at a time): this one runs in-process
    except (OSError, ValueError, EOFError, TypeError):
        return ABSENT
    if reply is None:
        return ABSENT  # it went away before taking the call: nothing ran
    if "ready" not in reply:
        return OFF if reply.get("stale") else FALLBACK
    conn.settimeout(None)
    try:
        send(conn, {"go": True}, fds=[0, 1, 2])
    except OSError:
        return ABSENT
    reply = _reply(receiver, pid)
    if reply is None:
        if writes:
            return STOPPED  # the caller finds out what was written (memrepo.cli.commands.settle_add)
        sys.stderr.write(STOPPED_MESSAGE + "\n")
        sys.stderr.flush()
        return STOPPED_CODE
    return FALLBACK if reply.get("fallback") else int(reply["code"])


def _reply(receiver: Receiver, pid: int) -> dict | None:
    while True:
        try:
            return receiver.receive()[0]
        except KeyboardInterrupt:
            import signal  # only here: it imports enum (~5 ms)
            try:
                os.kill(pid, signal.SIGINT)
            except OSError:
                return None
        except (OSError, ValueError, EOFError, TypeError):
            return None


def peer(conn) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a unix socket."""
    import _socket
    import struct
    pid, uid, _gid = struct.unpack("3i", conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12))
    return pid, uid


# A message is its length (4 bytes) and a marshal dump of a dict of plain values; the request
# carries the caller's fds 0-2 (SCM_RIGHTS). Both ends run the same interpreter (the stamp).

def send(conn, message: dict, *, fds: list[int] | None = None) -> None:
    import _socket
    import marshal
    import struct
    body = marshal.dumps(message)
    data = struct.pack("!I", len(body)) + body
    if fds:
        sent = conn.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))])
    else:
        sent = conn.send(data)
    if sent < len(data):
        conn.sendall(data[sent:])


class Receiver:
    """Messages as they arrive on one connection (a read may hold more than one)."""

    def __init__(self, conn):
        self.conn, self.data = conn, b""

    def receive(self, max_fds: int = 0) -> tuple[dict | None, list[int]]:
        """(message, fds received with it); None at end of file before a whole message."""
        import _socket
        import marshal
        import struct
        fds: list[int] = []
        while len(self.data) < 4 or len(self.data) < 4 + struct.unpack("!I", self.data[:4])[0]:
            if max_fds:
                chunk, ancillary, _flags, _addr = self.conn.recvmsg(1 << 16, _socket.CMSG_SPACE(4 * max_fds))
                for level, kind, payload in ancillary:
                    if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                        fds += struct.unpack(f"{len(payload) // 4}i", payload[:len(payload) - len(payload) % 4])
            else:
                chunk = self.conn.recv(1 << 16)
            if not chunk:
                for fd in fds:
                    os.close(fd)
                return None, []
            self.data += chunk
        size = struct.unpack("!I", self.data[:4])[0]
        body, self.data = self.data[4:4 + size], self.data[4 + size:]
        message = marshal.loads(body)
        return (message if isinstance(message, dict) else None), fds


def listening(path: str) -> bool:
    """True when a server listens at ``path`` (busy or not: a connection waits in its queue)."""
    import _socket
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(path)
        return True
    except OSError:
        return False
    finally:
        conn.close()


def ask(op: str, path: str, *, timeout: float = 5.0) -> dict | None:
    """The server's answer to ``op`` ("status" or "stop"), or None when none answers at ``path``."""
    import _socket
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(path)
        send(conn, {"op": op})
        return Receiver(conn).receive()[0]
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        conn.close()


def start(*, wait: float = 0.0) -> str | None:
    """Start a server for this code in the background unless one runs or is starting; with
    ``wait``, wait that many seconds for it to listen. Returns its socket path (None when no
    server can run here). Never raises: the call that starts it has already run."""
    try:
        code_stamp = stamp()
        path = socket_path(code_stamp, create=True)
        if path is None:
            return None
        if not listening(path) and _claim(path + ".start"):
            _spawn(path, code_stamp)  # it takes over a killed server's socket file
        if wait:
            import time
            deadline = time.monotonic() + wait
            while ask("status", path, timeout=1.0) is None and time.monotonic() < deadline:
                time.sleep(0.05)
        return path
    except Exception:  # noqa: BLE001 — starting it is a courtesy; the command already ran
        return None


def _claim(marker: str) -> bool:
    """Create the start marker (one client starts the server); a stale one is taken over."""
    import time
    for _ in range(2):
        try:
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return True
        except FileExistsError:
            try:
                if time.time() - os.stat(marker).st_mtime < START_STALE:
                    return False
                os.unlink(marker)
            except OSError:
                return False
    return False


def _spawn(path: str, code_stamp: str) -> None:
    """Start the server detached, with this interpreter's flags (the library's one starter of
    child processes; the call that starts it has already imported the library)."""
    from memrepo import api
    try:
        api.start_detached("-m", "memrepo.cli.server", path, code_stamp, interpreter_flags=True, cwd="/")
    except OSError:
        os.unlink(path + ".start")


def sockets() -> list[str]:
    """The sockets in the runtime folder: this user's servers, of every install and environment."""
    folder = runtime_dir()
    if folder is None:
        return []
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".sock"))


def servers() -> list[dict]:
    """The status of every server of this user (its install, environment, calls, idle time);
    asking does not count as a call, so it keeps no server alive."""
    found = []
    for path in sockets():
        status = ask("status", path)
        if status is not None:
            found.append({**status, "socket": path, "this_install": status.get("package") == package()})
    return found


def stop(*, every_install: bool = False, timeout: float = 5.0) -> list[dict]:
    """Stop this install's servers (every environment's; with ``every_install``, every server
    of this user); their status as they stopped. A socket nobody listens at is removed."""
    import signal
    import time
    stopped = []
    for path in sockets():
        status = ask("status", path)
        if status is None:
            try:
                os.unlink(path)  # nobody listens: a killed server's socket
            except OSError:
                pass
            continue
        if not every_install and status.get("package") != package():
            continue
        status = ask("stop", path) or status
        deadline = time.monotonic() + timeout
        while _alive(status["pid"]) and time.monotonic() < deadline:
            time.sleep(0.02)
        if _alive(status["pid"]):
            os.kill(status["pid"], signal.SIGKILL)
        stopped.append(status)
    return stopped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (a child of ours not yet reaped) is gone for our purpose
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True
