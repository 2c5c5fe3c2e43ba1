#!/usr/bin/env python3
"""A benchmark run's raw data: raw/ while the run writes it, raw.tar.xz once it ended.

    scripts/bench/rawdata.py pack DIR...     raw/ into raw.tar.xz, then raw/ removed
    scripts/bench/rawdata.py check DIR...    is each raw.tar.xz what pack makes of it?

The archive is made the same way every time (names sorted, no dates, owners or modes of the
machine that made it, the same compression), so packing the same files again gives the same
bytes: a committed archive changes only when its data do. Its members are raw/NAME. A run
that was stopped keeps raw/: summarize.py reads either, and pack makes the archive later.
Raw reads both, the archive straight from memory (never extracted into the tree).
Exit status 0, or 1 naming what is wrong, 2 on bad use.
"""
import csv
import io
import json
import lzma
import os
import re
import shutil
import sys
import tarfile

ARCHIVE = "raw.tar.xz"
MEMBER = "raw/"
XZ_PRESET = 6
BYTES_MAX = 1 << 30		# an archive that unpacks to more is refused


def pack_tar(files):
    """The tar of files ({name: bytes}), the same bytes for the same files."""
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name in sorted(files):
            data = files[name]
            info = tarfile.TarInfo(MEMBER + name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            t.addfile(info, io.BytesIO(data))
    return tar.getvalue()


def pack_bytes(files):
    """The archive of files ({name: bytes}): their tar, compressed the same way each time."""
    return lzma.compress(pack_tar(files), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                         preset=XZ_PRESET)


def unpack_bytes(path):
    """{name: bytes} of an archive: regular files under raw/ only, no deeper paths."""
    files, total = {}, 0
    with tarfile.open(path, mode="r:xz") as t:
        for m in t:
            if m.isdir() and m.name.rstrip("/") == MEMBER.rstrip("/"):
                continue	# raw/ itself, as tar -c raw lists it
            name = m.name[len(MEMBER):] if m.name.startswith(MEMBER) else ""
            if not m.isreg() or not name or "/" in name or name.startswith("."):
                raise ValueError(f"{path}: {m.name!r} is not a raw data file")
            total += m.size
            if total > BYTES_MAX:
                raise ValueError(f"{path}: unpacks to more than {BYTES_MAX} bytes")
            files[name] = t.extractfile(m).read()
    return files


class Raw:
    """The raw data of the run in out: its files by name, from raw/ or from the archive."""

    def __init__(self, out):
        self.out = out
        d, a = os.path.join(out, "raw"), os.path.join(out, ARCHIVE)
        if os.path.isdir(d) and os.path.exists(a):
            raise ValueError(f"{out}: both raw/ and {ARCHIVE} (pack it again, or remove one)")
        if os.path.isdir(d):
            self.dir, self.files = d, None
            self._names = sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))
        elif os.path.exists(a):
            self.dir, self.files = None, unpack_bytes(a)
            self._names = sorted(self.files)
        else:
            raise FileNotFoundError(f"{out}: no raw data (neither raw/ nor {ARCHIVE})")

    def names(self):
        return list(self._names)

    def has(self, name):
        return name in self._names

    def bytes(self, name):
        if self.files is not None:
            if name not in self.files:
                raise FileNotFoundError(f"{self.out}/{ARCHIVE}: no {MEMBER}{name}")
            return self.files[name]
        with open(os.path.join(self.dir, name), "rb") as f:
            return f.read()

    def text(self, name):
        return self.bytes(name).decode("utf-8")

    def json(self, name):
        return json.loads(self.text(name))

    def csv(self, name):
        return list(csv.DictReader(io.StringIO(self.text(name))))

    def match(self, pattern):
        """(name, match) for every file whose name matches pattern whole, by name."""
        return [(n, m) for n in self._names for m in [re.fullmatch(pattern, n)] if m]


def pack(out):
    """out/raw/ into out/raw.tar.xz (written whole, then raw/ removed); its size."""
    d, a = os.path.join(out, "raw"), os.path.join(out, ARCHIVE)
    if os.path.exists(a):
        raise ValueError(f"{out}: {ARCHIVE} is there already")
    if not os.path.isdir(d):
        raise FileNotFoundError(f"{out}: no raw/ to pack")
    files = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if not os.path.isfile(p) or os.path.islink(p):
            raise ValueError(f"{p}: not a regular file (raw/ holds files only)")
        with open(p, "rb") as f:
            files[name] = f.read()
    data = pack_bytes(files)
    with open(a + ".tmp", "wb") as f:
        f.write(data)
    os.replace(a + ".tmp", a)
    shutil.rmtree(d)
    return len(data)


def check(out):
    """None when out's archive is what pack makes of its files, else what differs."""
    a = os.path.join(out, ARCHIVE)
    if not os.path.exists(a):
        return f"{out}: no {ARCHIVE}"
    with open(a, "rb") as f:
        if f.read() != pack_bytes(unpack_bytes(a)):
            return f"{a}: not as pack makes it (scripts/bench/rawdata.py pack)"
    return None


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("pack", "check"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    bad = 0
    for out in sys.argv[2:]:
        try:
            if sys.argv[1] == "pack":
                n = pack(out)
                print(f"{out}/{ARCHIVE}: {n} bytes")
            else:
                why = check(out)
                if why:
                    raise ValueError(why)
        except (OSError, ValueError, tarfile.TarError, lzma.LZMAError) as e:
            print(f"rawdata.py: {e}", file=sys.stderr)
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
