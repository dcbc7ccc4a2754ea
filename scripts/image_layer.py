"""Writes the root filesystem layer of a Switchboard image as a tar, the same
bytes for the same inputs: files owned by root (data directories by the
non-root user 65532), times set to SOURCE_DATE_EPOCH.

    python3 image_layer.py OUT.tar --bin PATH... --lib PATH... --file SRC=DEST...

`--bin` files go to /usr/local/bin; `--lib` files (the shared libraries the
binaries need, as `ldd` lists them) keep their path with links resolved;
`--file` copies SRC to DEST.
"""

import argparse
import io
import os
import tarfile

NONROOT = 65532
PASSWD = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
GROUP = "root:x:0:\nnonroot:x:65532:\n"
NSSWITCH = "passwd: files\ngroup: files\nhosts: files dns\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--bin", action="append", default=[])
    parser.add_argument("--lib", action="append", default=[])
    parser.add_argument("--file", action="append", default=[])
    args = parser.parse_args()
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    entries: dict[str, tuple[str, bytes | None, int, int]] = {}

    def directory(path: str, mode: int = 0o755, owner: int = 0) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if sub not in entries:
                entries[sub] = ("dir", None, mode if i == len(parts) else 0o755, owner if i == len(parts) else 0)

    def file(dest: str, data: bytes, mode: int) -> None:
        directory(os.path.dirname(dest))
        entries[dest.strip("/")] = ("file", data, mode, 0)

    def read(path: str) -> bytes:
        with open(os.path.realpath(path), "rb") as f:
            return f.read()

    for path in args.bin:
        file(f"/usr/local/bin/{os.path.basename(path)}", read(path), 0o755)
    for path in args.lib:
        file(path, read(path), 0o755)
    for spec in args.file:
        src, dest = spec.split("=", 1)
        file(dest, read(src), 0o644)
    file("/etc/passwd", PASSWD.encode(), 0o644)
    file("/etc/group", GROUP.encode(), 0o644)
    file("/etc/nsswitch.conf", NSSWITCH.encode(), 0o644)
    directory("/tmp", 0o1777)
    directory("/home/nonroot", 0o700, NONROOT)
    directory("/var/lib/switchboard", 0o700, NONROOT)

    with tarfile.open(args.out, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            kind, data, mode, owner = entries[name]
            info = tarfile.TarInfo(name)
            info.mtime = mtime
            info.mode = mode
            info.uid = info.gid = owner
            info.uname = info.gname = "nonroot" if owner else "root"
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


if __name__ == "__main__":
    main()
