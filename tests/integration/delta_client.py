#!/usr/bin/env python3
"""delta_client.py: a client for the endpoint's ?seconds=N requests that
says when the server has the request, so a test can start its allocations
after the server's baseline instead of after a sleep.

  delta_client.py get PORT PATH DIR
      sends GET PATH to 127.0.0.1:PORT; once the server has read the whole
      request (its side of the connection has nothing left to read, seen in
      /proc/net/tcp), creates DIR/read; then writes the response's headers
      to DIR/headers, its body to DIR/body, and "T0 T1" (CLOCK_REALTIME ns
      before sending, after the response) to DIR/times. Exit 1 if the
      server has not read the request within 60 s.
  delta_client.py times PROFILE
      prints the profile's time_nanos and duration_nanos (0 when absent).

The server reads a request and takes its baseline in the same turn of its
loop, before it polls again: DIR/read is seen at most microseconds before
the baseline. A test still checks the window it meant against the
baseline's time in the profile (time_nanos - duration_nanos).
"""
import gzip
import http.client
import os
import sys
import time


def server_has_read(port, cport):
    """The server's socket of this connection (local PORT, remote CPORT)
    exists, is established and holds no unread bytes."""
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            v = line.split()
            local, remote, st, queues = v[1], v[2], v[3], v[4]
            if (int(local.split(":")[1], 16) == port and
                    int(remote.split(":")[1], 16) == cport and st == "01"):
                return int(queues.split(":")[1], 16) == 0
    return False


def get(port, path, d):
    port = int(port)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.time_ns()
    c.connect()
    cport = c.sock.getsockname()[1]
    c.request("GET", path)  # returns once the whole request is sent
    end = time.monotonic() + 60
    while not server_has_read(port, cport):
        if time.monotonic() > end:
            sys.exit("the server did not read the request within 60 s")
        time.sleep(0.002)
    open(os.path.join(d, "read"), "w").close()
    r = c.getresponse()
    body = r.read()
    t1 = time.time_ns()
    with open(os.path.join(d, "headers"), "w") as f:
        f.write("HTTP %d\n" % r.status)
        for k, v in r.getheaders():
            f.write("%s: %s\n" % (k, v))
    with open(os.path.join(d, "body"), "wb") as f:
        f.write(body)
    with open(os.path.join(d, "times"), "w") as f:
        f.write("%d %d\n" % (t0, t1))


def varint(b, i):
    v, s = 0, 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return v, i


def times(path):
    b = open(path, "rb").read()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    i, t, d = 0, 0, 0
    while i < len(b):
        key, i = varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
            if field == 9:
                t = v
            elif field == 10:
                d = v
        elif wire == 2:
            n, i = varint(b, i)
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            sys.exit("bad wire type %d" % wire)
    print(t, d)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "get":
        get(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "times":
        times(sys.argv[2])
    else:
        sys.exit(__doc__)
