#!/usr/bin/env python3
"""A hostile (or broken) receiver of psb's multicast: a NACK storm.

    mc_storm.py --local IP --group IP:PORT [--rate N] [--seconds S] [--ids K]
                [--json FILE]

It joins the group on the interface of IP, learns the sender's address from the group's own
packets and copies their 32-byte description of the newest version into NACKs that ask for
every symbol of every group (the first 256 groups), --rate of them a second (default 3000)
for --seconds (default 10), under K receiver ids in turn (default 1). It is what the tests
and scripts/bench/mc_storm.sh use to show that one receiver cannot hold back the others.
Prints, and with --json writes, what it sent and heard.
"""
import argparse
import json
import os
import select
import socket
import struct
import sys
import time

MAGIC = 0x504D
HLEN = 40
NACK = 4
NCF = 5
NACK_MAX = 256


def group_arg(text):
    ip, _, port = text.rpartition(":")
    socket.inet_aton(ip)
    return ip, int(port)


def nack(desc, rid):
    """A NACK of the version desc (header bytes 2..32) naming every symbol of every group."""
    nseg, total = struct.unpack_from(">IQ", desc, 12 - 2)
    k = struct.unpack_from(">H", desc, 28 - 2)[0]
    ngroups = (nseg + k - 1) // k
    n = min(ngroups, NACK_MAX)
    body = bytearray()
    for g in range(n):
        kg = min(k, nseg - g * k)
        mask = (1 << kg) - 1
        body += struct.pack(">IHHQ", g, kg, 0, mask)
    head = struct.pack(">H", MAGIC) + desc[0:1] + bytes([NACK]) + desc[2:30]
    return head + struct.pack(">IHH", rid, n, 0) + bytes(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--local", required=True)
    ap.add_argument("--group", required=True, type=group_arg)
    ap.add_argument("--rate", type=float, default=3000.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--ids", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.rate <= 0 or a.seconds <= 0 or a.ids < 1:
        sys.exit("mc_storm.py: --rate, --seconds and --ids must be positive")
    gip, gport = a.group
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    rx.bind((gip, gport))
    rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                  socket.inet_aton(gip) + socket.inet_aton(a.local))
    rx.setblocking(False)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.bind((a.local, 0))
    desc, sender, vid = None, None, 0
    sent = heard = 0
    period = 1.0 / a.rate
    t0 = time.monotonic()
    end = t0 + a.seconds
    due = t0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        wait = max(0.0, min(due, end) - now) if desc is not None else min(0.05, end - now)
        r, _, _ = select.select([rx], [], [], wait)
        if r:
            while True:
                try:
                    pkt, frm = rx.recvfrom(65536)
                except BlockingIOError:
                    break
                heard += 1
                if len(pkt) < HLEN or struct.unpack_from(">H", pkt)[0] != MAGIC or \
                        pkt[3] in (NACK, NCF):
                    continue
                v = struct.unpack_from(">I", pkt, 8)[0]
                if v >= vid:
                    vid, desc, sender = v, bytes(pkt[2:32]), frm
        now = time.monotonic()
        # as many NACKs as are due, each a full one: a storm, not a trickle
        while desc is not None and due <= now:
            tx.sendto(nack(desc, 1000000 + sent % a.ids), sender)
            sent += 1
            due += period
        if desc is None:
            due = now
    out = {"nacks": sent, "heard": heard, "newest_version": vid, "ids": a.ids,
           "sender": "%s:%d" % sender if sender else "", "seconds": a.seconds}
    print("mc_storm: %d NACKs to %s (newest version %d, %d packets heard), %d ids" %
          (sent, out["sender"] or "nobody", vid, heard, a.ids))
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f)
        os.replace(tmp, a.json)


if __name__ == "__main__":
    main()
