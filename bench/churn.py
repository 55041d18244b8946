#!/usr/bin/env python3
"""churn.py: a python3 allocation churn for the capture benchmarks.

    PYTHONMALLOC=malloc PYTHONHASHSEED=0 python3 bench/churn.py [ROUNDS]

Builds and drops dicts, lists, tuples and strings of mixed sizes, keeping a
bounded live set (a ring of recent objects), so every small object goes
through malloc/free when PYTHONMALLOC=malloc. Deterministic; prints a
checksum that does not depend on addresses or timing. ~2 s by default.
"""
import sys


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 45
    ring = [None] * 4096
    pos = 0
    check = 0
    x = 12345
    for r in range(rounds):
        for i in range(2000):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
            n = x % 24
            d = {"k%d" % j: str(j * x) for j in range(n)}
            lst = [s.upper() for s in d.values()]
            t = tuple(lst[: n // 2])
            s = "-".join(lst)
            if x % 7 == 0:
                s = s * (1 + x % 40)  # a few larger strings
            ring[pos] = (d, t, s)
            pos = (pos + 1) & 4095
            check = (check * 31 + len(s) + len(t) + len(d)) & 0xFFFFFFFF
        # drop a slice of the ring each round
        for j in range(0, 4096, 3):
            ring[(pos + j) & 4095] = None
    print("churn rounds=%d checksum=%d" % (rounds, check))


if __name__ == "__main__":
    main()
