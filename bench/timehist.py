#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench/timehist's helper: summarize a `bpftool -j map dump` of time_hist
(bpf/timehist.bpf.h), or with --zero PIN clear the pinned map."""
import json
import subprocess
import sys
import tempfile

LINEAR = 64                      # buckets of 16 ns below 1,024 ns
BUCKETS = LINEAR + 22            # then one per power of two
NAMES = ["recv_length", "send_length", "enforce_ingress", "sendmsg_sample",
         "(empty section)", "(empty, recv_length)", "enforce_sockops, established",
         "destroy_sock", "enforce_sockops, segment", "enforce_sockops, state",
         "enforce_sockops, crowd"]


def lo(i):
    return i * 16 if i < LINEAR else 1024 << (i - LINEAR)


def hi(i):
    return (i + 1) * 16 if i < LINEAR else 2048 << (i - LINEAR)


def zero(pin):
    with tempfile.NamedTemporaryFile("w", suffix=".batch") as f:
        for k in range(len(NAMES) * BUCKETS):
            key = " ".join(str(b) for b in k.to_bytes(4, "little"))
            f.write(f"map update pinned {pin} key {key} value 0 0 0 0 0 0 0 0\n")
        f.flush()
        subprocess.run(["bpftool", "batch", "file", f.name], check=True,
                       stdout=subprocess.DEVNULL)


def summarize(path):
    hist = {}
    for e in json.load(open(path)):
        hist[e["formatted"]["key"]] = sum(v["value"] for v in e["formatted"]["values"])
    print(f"   {'program':22s} {'runs':>9s} {'median':>7s} {'p90':>6s} {'p99':>7s} "
          f"{'mean':>6s} {'<4us':>6s}  runs >= 4 us (their share of the mean)")
    for p, name in enumerate(NAMES):
        b = [hist.get(p * BUCKETS + i, 0) for i in range(BUCKETS)]
        total = sum(b)
        if not total:
            continue
        mid = [(lo(i) + hi(i)) / 2 for i in range(BUCKETS)]
        mean = sum(c * mid[i] for i, c in enumerate(b)) / total
        short = [(i, c) for i, c in enumerate(b) if hi(i) <= 4096]
        nshort = sum(c for _, c in short)
        smean = sum(c * mid[i] for i, c in short) / nshort if nshort else 0
        q, acc = {}, 0
        for i, c in enumerate(b):
            acc += c
            for f in (0.5, 0.9, 0.99):
                if f not in q and acc >= total * f:
                    q[f] = hi(i)
        print(f"   {name:22s} {total:9d} {'<' + str(q[0.5]):>7s} {'<' + str(q[0.9]):>6s} "
              f"{'<' + str(q[0.99]):>7s} {mean:6.0f} {smean:6.0f}  "
              f"{100 * (total - nshort) / total:.2f}% ({mean - smean:.0f} ns)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--zero":
        zero(sys.argv[2])
    elif len(sys.argv) == 2:
        summarize(sys.argv[1])
    else:
        sys.exit("usage: timehist.py --zero PIN | timehist.py DUMP.json")
