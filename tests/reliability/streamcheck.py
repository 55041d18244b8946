#!/usr/bin/env python3
"""streamcheck.py: helpers of rel_streams.sh (profiles written to a FIFO or
to stdout, issue 29 item 6).

  hold FIFO CMD...   waits (30 s at most) until FIFO has a reader, keeps a
                     write end open while CMD runs, then closes it: the
                     reader sees end-of-file only after CMD and every
                     process it started have exited (as a shell's
                     `exec 3>FIFO` would). Exits with CMD's status.
  slowcat FIFO OUT   a slow reader: opens FIFO, shrinks its buffer to one
                     page, and copies it to OUT a page at a time, a
                     millisecond apart, until end-of-file.
  nopipe CMD...      runs CMD with stdout a pipe whose reader has gone;
                     exits with its status (128 + N if killed by N).
  split FILE PREFIX  FILE as a sequence of whole gzip members (profiles
                     written one after another); writes each to
                     PREFIX.N.pb.gz and prints how many. Exit 1 if FILE
                     holds anything else (a torn or interleaved profile,
                     stray bytes).
"""
import errno
import os
import subprocess
import sys
import time
import zlib


def hold(fifo, cmd):
    end = time.monotonic() + 30
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > end:
                raise
            time.sleep(0.01)
    rc = subprocess.call(cmd)
    os.close(fd)
    return rc


def slowcat(fifo, out):
    fd = os.open(fifo, os.O_RDONLY)
    try:
        import fcntl
        fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ
    except OSError:
        pass
    with open(out, "wb") as f:
        while True:
            b = os.read(fd, 4096)
            if not b:
                break
            f.write(b)
            time.sleep(0.001)
    return 0


def nopipe(cmd):
    r, w = os.pipe()
    os.close(r)
    rc = subprocess.call(cmd, stdout=w)
    return 128 - rc if rc < 0 else rc


def split(path, prefix):
    data = open(path, "rb").read()
    n = 0
    while data:
        if data[:2] != b"\x1f\x8b":
            print("stray bytes at member %d: %r" % (n, data[:16]), file=sys.stderr)
            return 1
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            body = d.decompress(data)
        except zlib.error as e:
            print("member %d does not inflate: %s" % (n, e), file=sys.stderr)
            return 1
        if not d.eof:
            print("member %d is cut short" % n, file=sys.stderr)
            return 1
        used = len(data) - len(d.unused_data)
        with open("%s.%d.pb.gz" % (prefix, n), "wb") as f:
            f.write(data[:used])
        if not body:
            print("member %d is empty" % n, file=sys.stderr)
            return 1
        data = d.unused_data
        n += 1
    print(n)
    return 0


def main():
    if len(sys.argv) > 3 and sys.argv[1] == "hold":
        return hold(sys.argv[2], sys.argv[3:])
    if len(sys.argv) > 2 and sys.argv[1] == "nopipe":
        return nopipe(sys.argv[2:])
    if len(sys.argv) == 4 and sys.argv[1] == "slowcat":
        return slowcat(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "split":
        return split(sys.argv[2], sys.argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
