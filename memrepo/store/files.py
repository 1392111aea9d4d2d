"""Files of the vault: written so readers see the old version or the new one, never a
half-written one, with the user's umask; read without following a symlink anywhere on the way.

A clone or a pull of someone else's vault can hold symlinks (git writes them on checkout), and
a link in place of an evidence file or a memory would make memrepo print or index a file
outside the vault (``~/.ssh/id_rsa``). :func:`read_inside` opens each folder on the way and the
file itself with ``O_NOFOLLOW``, so a link is refused wherever it stands.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from memrepo.errors import Conflict, InvalidData, Problem

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def atomic_write(target: Path, payload: bytes, *, mode: int | None = None) -> None:
    """Write via a temp file and ``os.replace``: readers see the old file or the new one. The
    file gets the mode the user's umask gives a new file (``0o666 & ~umask``), as git does, or
    ``mode`` when given (keeping a file's own permissions), set before it takes the target's place."""
    with atomic_file(target, mode=mode) as fh:
        fh.write(payload)


@contextmanager
def atomic_file(target: Path, *, mode: int | None = None) -> Iterator[BinaryIO]:
    """:func:`atomic_write` a piece at a time: the block writes the temp file it is given,
    which takes ``target``'s place when the block ends (and is removed if it raises) — for
    a file too large to build in memory first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        raise Conflict(f"{target} is a symlink; memrepo never writes through links")
    tmp = _create_temp(target)
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | _NOFOLLOW), "wb") as fh:
            yield fh
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _create_temp(target: Path) -> str:
    """A new empty file beside ``target``, created with mode 0o666 so the umask decides
    (``tempfile.mkstemp`` makes 0o600 and a chmod after it would override the umask)."""
    for _ in range(100):
        name = str(target.parent / f".{target.name}.{os.urandom(4).hex()}.tmp")
        try:
            os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | _NOFOLLOW, 0o666))
            return name
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file beside {target}")


def refuse_blocked(root: Path, changes: dict[str, bytes | None]) -> None:
    """Refuse (:class:`Conflict`), before a branch moves, a change the checkout could not take
    because something not in the change is in the way: a file where a written path needs a
    folder, or a folder holding other files where a file goes. Found after the branch moved,
    the checkout would fail half-way, and so would every later recovery of it."""
    gone = {path for path, data in changes.items() if data is None}
    for path, data in changes.items():
        if data is None:
            continue
        parts = path.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder not in gone and os.path.lexists(root / folder) and not (root / folder).is_dir():
                raise _blocked(path, folder, "a file")
        target = root / path
        if target.is_dir() and not target.is_symlink():
            others = [rel for rel in _files_under(root, path) if rel not in gone]
            if others:
                raise _blocked(path, path, f"a folder holding {others[0]}")


def _files_under(root: Path, rel: str) -> list[str]:
    return [str((Path(folder) / name).relative_to(root)) for folder, _dirs, names in os.walk(root / rel)
            for name in names]


def _blocked(path: str, where: str, what: str) -> Conflict:
    return Conflict(f"{where} is in the way: the change writes {path}, but {where} is {what} in the checkout, "
                    "not part of the change; move it aside and run the command again (nothing was written)")


def copy_tree(source: Path, target: Path) -> None:
    """Copy a folder of plain files (the vault template) with the modes the user's umask gives
    new files and folders: ``shutil.copytree`` copies the package's own modes (0755, 0644), so a
    private umask (077) would still leave the vault readable by every local user."""
    for folder, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = Path(folder).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            data = (Path(folder) / name).read_bytes()
            with open(os.open(target / rel / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o666), "wb") as fh:
                fh.write(data)


class LinkRefused(InvalidData):
    """A path inside the vault that is (or passes through) a symlink: never read through."""


def read_inside(root: Path, rel: str) -> bytes:
    """The bytes of the regular file ``root/rel``; :class:`LinkRefused` when the file or any
    folder on the way is a symlink (or not a regular file), FileNotFoundError when absent."""
    parts = [p for p in rel.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise LinkRefused([Problem(rel, "(file)", "is not a path inside the vault")])
    fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            try:
                nxt = os.open(part, os.O_RDONLY | _NOFOLLOW | (0 if last else _DIRECTORY), dir_fd=fd)
            except OSError as e:
                link = "/".join(parts[:i + 1])
                if e.errno == errno.ELOOP or (e.errno == errno.ENOTDIR and os.path.islink(os.path.join(root, link))):
                    raise _refused(rel, link) from None  # O_NOFOLLOW met a symlink
                raise
            os.close(fd)
            fd = nxt
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LinkRefused([Problem(rel, "(file)", "is not a regular file; memrepo reads only plain files here")])
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _refused(rel: str, link: str) -> LinkRefused:
    where = "" if link == rel else f" ({link} on the way is one)"
    return LinkRefused([Problem(rel, "(file)", (
        f"is read through a symlink{where}; memrepo never follows links inside the vault (a clone or pull of "
        "someone else's vault can make them point at any file): replace the link with the file itself"))])
