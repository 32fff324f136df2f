"""Asking a URL or a git server (the hub: harness.data.hub). Each failure to reach one is Unavailable, so
`harness fetch` can say, per source, what to place by hand instead."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from tqdm import tqdm

from harness.errors import HarnessError

BLOCK = 1 << 20
GIT_TIMEOUT_S = 3600


class Unavailable(HarnessError):
    """The server could not be asked or did not answer."""


def download(href: str, *, progress: bool) -> bytes:
    try:
        with urllib.request.urlopen(href, timeout=60) as response:  # noqa: S310 - the study's declared URL
            size = int(response.headers.get("Content-Length") or 0) or None
            out = io.BytesIO()
            with tqdm(total=size, unit="B", unit_scale=True, desc=Path(href).name, disable=not progress,
                      leave=False) as bar:
                for block in iter(lambda: response.read(BLOCK), b""):
                    out.write(block)
                    bar.update(len(block))
            return out.getvalue()
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise Unavailable(f"{type(e).__name__}: {e}") from None


def archive_member(data: bytes, member: str, href: str) -> bytes:
    """One file of a .tar(.gz/.bz2/.xz) or .zip archive, by its path inside the archive."""
    try:
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                return archive.read(member)
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            handle = archive.extractfile(member)
            if handle is None:
                raise KeyError(member)
            return handle.read()
    except KeyError:
        raise HarnessError(f"{href}: the archive has no member {member!r}") from None
    except (tarfile.TarError, zipfile.BadZipFile) as e:
        raise HarnessError(f"{href}: not a tar or zip archive ({e})") from None


# --- git ---


def git(folder: Path, *args: str, quiet: bool = True) -> str:
    """`git -C folder args`; HarnessError with git's own message when it fails."""
    try:
        proc = subprocess.run(["git", "-C", str(folder), *args], capture_output=quiet, text=True,
                              timeout=GIT_TIMEOUT_S)
    except FileNotFoundError:
        raise HarnessError("the `git` command is not installed") from None
    except subprocess.TimeoutExpired:
        raise Unavailable(f"git {args[0]} took more than {GIT_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        raise HarnessError(
            f"git {' '.join(args)}: {(proc.stderr or '').strip() or f'exit {proc.returncode}'}"
        )
    return (proc.stdout or "").strip()


def head(folder: Path) -> str | None:
    """The HEAD commit of a git checkout, or None for a folder that is not one."""
    if not (folder / ".git").exists():
        return None
    return git(folder, "rev-parse", "HEAD")


def checkout_commit(repository: str, commit: str, folder: Path, *, progress: bool) -> str:
    """Clone exactly `commit` of `repository` into `folder` (absent) and return the full commit checked out.

    The clone is built in a sibling `.<name>.fetch-tmp` and renamed when HEAD is verified, so an interrupted
    fetch leaves no half checkout; a rerun reuses the objects already fetched there. A full hash is fetched
    alone and shallow; an abbreviated one (or a server refusing a fetch by hash) needs the history without
    file contents, to resolve the hash; then only that commit's files are fetched."""
    scratch = folder.parent / f".{folder.name}.fetch-tmp"
    created = not scratch.exists()
    scratch.mkdir(parents=True, exist_ok=True)
    if not (scratch / ".git").exists():
        git(scratch, "init", "--quiet")
        git(scratch, "remote", "add", "origin", repository)
    capture = not progress  # git's own progress goes to the terminal only when asked for
    fetch = ["fetch", "--quiet"] if capture else ["fetch", "--progress"]
    try:
        if len(commit) == 40:
            try:
                git(scratch, *fetch, "--depth", "1", "origin", commit, quiet=capture)
            except HarnessError:
                git(scratch, *fetch, "--filter=blob:none", "origin", quiet=capture)
        else:
            git(scratch, *fetch, "--filter=blob:none", "origin", quiet=capture)
    except HarnessError as e:
        if created:  # nothing fetched to resume from: leave no trace
            shutil.rmtree(scratch, ignore_errors=True)
        raise Unavailable(str(e)) from None
    try:
        full = git(scratch, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    except HarnessError:
        raise HarnessError(f"{repository}: commit {commit} is not in the repository") from None
    try:
        git(scratch, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", full)
    except HarnessError as e:
        raise Unavailable(str(e)) from None
    if head(scratch) != full or not full.startswith(commit):
        raise HarnessError(f"{repository}: checked out {head(scratch)}, not {commit}")
    if folder.exists():
        shutil.rmtree(scratch)
        raise HarnessError(f"{folder}: appeared while fetching; not replaced")
    scratch.rename(folder)
    return full


def tree_summary(folder: Path) -> dict:
    """The checkout's identity: its commit, git's tree id (a hash of every tracked file's content), and the
    number and total size of the tracked files."""
    sizes = git(folder, "ls-tree", "-r", "-l", "HEAD")
    count, total = 0, 0
    for line in sizes.splitlines():
        meta = line.split("\t", 1)[0].split()
        if len(meta) == 4 and meta[1] == "blob":
            count += 1
            total += int(meta[3])
    return {"commit": git(folder, "rev-parse", "HEAD"), "tree": git(folder, "rev-parse", "HEAD^{tree}"),
            "files": count, "bytes": total}


def modified_files(folder: Path) -> list[str]:
    """Tracked files changed since the checkout (untracked files are ignored: the adapters read tracked
    ones)."""
    return git(folder, "status", "--porcelain", "--untracked-files=no").splitlines()
