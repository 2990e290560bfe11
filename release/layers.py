"""Image layers as reproducible tar streams: GNU tar's reproducible-build options (sorted names,
one fixed time, numeric ownership as on disk, no access or change times)."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Iterable
from pathlib import Path

from release.run import sh


def tar_layer(root: Path, out: Path, epoch: int, members: Iterable[str] | None = None) -> Path:
    """``root``'s tree (or only ``members``, paths relative to it, without their directories'
    other contents) as the uncompressed tar ``out``."""
    argv: list[str | Path] = [
        "tar",
        "--sort=name",
        # every entry at one time, not clamped: a cached tree's times are those of the day it was
        # made, which a clamp to a later commit would keep and a cold build would not have
        f"--mtime=@{epoch}",
        "--numeric-owner",
        "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
        "-C",
        root,
        "-cf",
        out,
    ]
    if members is None:
        argv.append(".")
    else:
        listing = out.with_suffix(".members")
        listing.write_text("".join(f"./{m}\n" for m in sorted(set(members))))
        argv += ["--no-recursion", "-T", listing]
    sh(f"layer {out.name}", argv)
    return out


def normalize_tar_gz(path: Path, epoch: int) -> Path:
    """Rewrite the .tar.gz ``path`` (a chart from ``helm package``, an sdist) so that it depends on
    its contents only: members in name order, every time at ``epoch``, owned by 0:0 with no names,
    and no time in the gzip header. Neither tool offers this; their archives carry the packing time
    or the checkout's file times."""
    with tarfile.open(path, "r:gz") as source:
        members = sorted(source.getmembers(), key=lambda m: m.name)
        contents = {m.name: source.extractfile(m).read() if m.isfile() else None for m in members}  # type: ignore[union-attr]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as out:
        for member in members:
            member.mtime, member.uid, member.gid, member.uname, member.gname = epoch, 0, 0, "", ""
            member.pax_headers = {}
            data = contents[member.name]
            out.addfile(member, io.BytesIO(data) if data is not None else None)
    with open(path, "wb") as file, gzip.GzipFile(fileobj=file, mode="wb", mtime=0, filename="") as packed:
        packed.write(raw.getvalue())
    return path
