#!/usr/bin/env python3
"""icrc_oracle.py [LIST FILE.pcap...]: the RoCE ICRC as the InfiniBand specification defines
it (annex A16 for RoCEv1, A17 for RoCEv2), computed here with zlib's CRC-32 and nothing of
lib/roce: 8 bytes of ones for the LRH, then the network header with the fields routers may
change set to ones (IPv4 TOS, TTL and header checksum; IPv6 and GRH traffic class, flow
label and hop limit), the UDP header with its checksum set to ones (v2), the BTH with its
FECN/BECN/reserved byte set to ones, and the rest of the packet up to its ICRC, which is
carried least significant byte first.

It first reproduces the ICRC of every published frame below. With LIST (roce_account --icrc)
and the pcap files it was made from, every RoCE frame listed must have the ICRC computed here
from lib/roce's reference and from lib/roce as psb takes it (in place where the CPU can);
each kind must be there, in frames of more than four 64-byte windows. Exit 1 naming every
difference; else 77 (skipped) when psb did not take the ICRC in place, which was then not
checked."""
import os
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from psbframe import read_pcap  # noqa: E402

# Published frames, each with the ICRC it carries. From scapy's RoCE tests
# (test/contrib/roce.uts): a CNP captured from a ConnectX-4 Lx; a UC SEND_ONLY over IPv4;
# "RoCE v1 RC RDMA WRITE ONLY" and "RoCE v1 RC ACKNOWLEDGE", captured; "RoCE over IPv6", the
# same SEND_ONLY over IPv6, given field by field, with the ICRC scapy computes for it.
PUBLISHED = {
    "v2_ip4 CNP (ConnectX-4 Lx)":
        "e41d2dab2bc2 7cfe90643b32 0800 45c2 003c 718c 4000 4011 9161 0a001101 0a001201"
        "0000 12b7 0028 0000 8100 ffff 4000 0118 0000 0000"
        "0000 0000 0000 0000 0000 0000 0000 0000 82fd 002a",
    "v2_ip4 UC SEND_ONLY":
        "248a07a8fa22 248a07a8fa22 0800 4501 0040 0478 4000 4011 b4d5 c0a80007 c0a80007"
        "c000 12b7 002c aca2 2460 ffff 0000 00d3 00cf 1710"
        "4630818be28935d90e9a95505401be885e500000 78f353f3 00000000",
    "v1 RC RDMA WRITE ONLY":
        "7cfe90753cd8 7cfe90753cd8 8915 6020 0000 0028 1b40"
        "0000 0000 0000 0000 0000 ffff 0f00 0002 0000 0000 0000 0000 0000 ffff 0f00 0002"
        "0a70 ffff 0000 010a 80a7 88bc 0000 55d4 c072 6000 0000 47b3 0000 0005"
        "0000 0000 0100 0000 e3d8 56bb",
    "v1 RC ACKNOWLEDGE":
        "7cfe90753cd8 7cfe90753cd8 8915 6020 0000 0014 1b40"
        "0000 0000 0000 0000 0000 ffff 0f00 0002 0000 0000 0000 0000 0000 ffff 0f00 0002"
        "1140 ffff 0000 0109 00a7 88c0 0000 0005 25f0 c038",
    "v2_ip6 UC SEND_ONLY":
        "248a07a8fa22 248a07a8fa22 86dd 6e21 face 002c 11ff"
        "2022 0000 0000 0000 0000 0000 0000 1023 2023 0000 0000 0000 0000 0000 0000 1024"
        "c000 12b7 002c e7c5 2460 ffff 0000 00d3 00cf 1710"
        "4630818be28935d90e9a95505401be885e500000 3e5b743b",
}
WINDOWS = 4 * 64


def be16(b, o):
    return b[o] << 8 | b[o + 1]


def icrc(frame):
    """(kind, ICRC computed, ICRC carried, bytes covered) of a RoCE frame."""
    et, net = be16(frame, 12), 14
    if et == 0x8100:
        et, net = be16(frame, 16), 18
    if et == 0x0800:
        ihl = (frame[net] & 15) * 4
        p = bytearray(frame[net:net + be16(frame, net + 2)])
        p[1] = p[8] = p[10] = p[11] = 0xff
        p[ihl + 6] = p[ihl + 7] = 0xff
        kind, bth = "v2_ip4", ihl + 8
    elif et in (0x86dd, 0x8915):
        p = bytearray(frame[net:net + 40 + be16(frame, net + 4)])
        p[0] |= 0x0f
        p[1] = p[2] = p[3] = p[7] = 0xff
        if et == 0x86dd:
            p[46] = p[47] = 0xff
            kind, bth = "v2_ip6", 48
        else:
            kind, bth = "v1", 40
    else:
        raise ValueError("Ethertype 0x%04x is not RoCE's" % et)
    p[bth + 4] = 0xff
    covered = b"\xff" * 8 + bytes(p[:-4])
    return kind, zlib.crc32(covered), int.from_bytes(p[-4:], "little"), len(covered)


def main():
    bad = []
    for name, hexs in PUBLISHED.items():
        kind, got, carried, _ = icrc(bytes.fromhex(hexs.replace(" ", "")))
        if got != carried or not name.startswith(kind):
            bad.append(f"published {name}: computed {got:08x}, carried {carried:08x} ({kind})")
    seen = {}
    impl, why = "?", ""
    if len(sys.argv) > 2:
        files = [read_pcap(p) for p in sys.argv[2:]]
        for line in open(sys.argv[1]):
            if line.startswith("# icrc "):
                impl, _, why = line[len("# icrc "):].strip().partition(" ")
                continue
            fi, fr, kind, ref, taken = line.split()
            want_kind, want, _, covered = icrc(files[int(fi)][int(fr)])
            n, longest = seen.get(kind, (0, 0))
            seen[kind] = (n + 1, max(longest, covered))
            where = f"{sys.argv[2 + int(fi)]} frame {int(fr) + 1} ({kind})"
            if kind != want_kind:
                bad.append(f"{where}: lib/roce says {kind}, its headers {want_kind}")
            if int(ref, 16) != want:
                bad.append(f"{where}: the reference's ICRC {ref}, the definition's {want:08x}")
            if int(taken, 16) != want:
                bad.append(f"{where}: psb's ICRC ({impl}) {taken}, the definition's {want:08x}")
        for kind in ("v1", "v2_ip4", "v2_ip6"):
            n, longest = seen.get(kind, (0, 0))
            if longest <= WINDOWS:
                bad.append(f"{kind}: {n} frames, none covering more than {WINDOWS} bytes")
    for b in bad[:20]:
        print("icrc_oracle: " + b, file=sys.stderr)
    if bad:
        sys.exit(1)
    print(f"icrc_oracle: the {len(PUBLISHED)} published frames' ICRCs reproduced" +
          "".join(f"; {n} {k} frames (up to {longest} bytes covered)"
                  for k, (n, longest) in sorted(seen.items())) +
          (f" agree with lib/roce's reference and with psb's ({impl})" if seen else ""))
    if why:
        print(f"skipped: {why}: the in-place ICRC is not checked against the definition")
        sys.exit(77)


main()
