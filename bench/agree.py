#!/usr/bin/env python3
"""Do two runs of `make bench` agree? Every ratio of one run beside the other's, with their difference.

Each run is the JSON file `bench.py --json FILE` wrote (its table). The rows are matched by position and
by what they measure (digits aside: counts in a row's name may differ); a ratio is the table's ratio
column (`2.27×`, `42%`, `p99 +6608 µs`, `0.060x`). Two figures agree when they differ by at most `--within`
(10% by default) of the larger. A row whose figure is a difference from its baseline, judged against an
allowance (row 3's `p99 +… µs` with the target `p99 ≤ base + 2 ms`), is compared on the scale of that
allowance: the two differences agree when they are within `--within` of the allowance (200 µs of 2 ms).
Measured against itself, a difference near zero has no stable relative size (+400 µs against +460 µs is
13%, though both say the same of the target), and row 3's p99 lines, a few hundred microseconds over a bare
timer, are medians of 41 bursts whose standard error (printed in the row) is tens of microseconds from the
stalls each burst meets (bench/README.md, row 3). Rows marked `(placement)` in the target column (row 1 unpinned: which CPU each end lands on) and
`(baselines)` (a baseline against another baseline, no daemon in it) and `(tail)` (row 1's p99 pinned to
one CPU: a p99 of 8–30 µs round trips is the host's interruptions — two baselines with no daemon in them
are 1.16–1.23× apart at the median in every run of 35 and 0.90–1.48× apart at the p99) and `(reference)` (the Python server,
whose own round trip pinned to one CPU is bimodal by connection: ~60 or ~125 µs) and `(floor)` (row 5
against the kernel's own freeze, busy-polled: that floor is mostly the wake of the app's halted vCPU, which
the host decides — 43 µs in one run, 60 µs in the next — while the daemon's figure and its ratio to the raw
freeze of the same method agree) and `(journald)` (row 1 pinned to one CPU beside the echo that journals
every call, where journald's socket queues fewer than 512 datagrams: once journald falls behind, that
echo's every send waits for it, and its rounds read ~15 or ~30 µs by whether that happened) and `(idle)` (row
5b's core decision after 30 ms asleep beside the same back to back: how much the CPU kept while it slept is
the host's, 5–30× from one run to the next) are printed as
information but not judged; every other ratio with the daemon in it is. Exit status: 0 when every judged ratio agrees, 1 otherwise.

Usage: python3 bench/agree.py RUN1.json RUN2.json [--within 0.10]
"""
import argparse
import json
import re
import sys

NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def ratio_value(text: str) -> float | None:
    """The leading number of a ratio cell, without the round spread in parentheses."""
    head = re.sub(r"\bp\d+\s+", "", text.split("(")[0])  # row 3's "p99 +1824 µs": the difference, not "99"
    m = NUMBER.search(head.replace(",", ""))
    return float(m.group()) if m else None


def allowance_us(target: str) -> float | None:
    """A target of the form `… ≤ base + N ms` (or µs): N in microseconds; None for any other target."""
    m = re.search(r"≤\s*base\s*\+\s*(\d+(?:\.\d+)?)\s*(ms|µs)", target)
    if not m:
        return None
    return float(m.group(1)) * (1000 if m.group(2) == "ms" else 1)


def shape(what: str) -> str:
    return re.sub(r"[\d.,]+", "#", what).strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--within", type=float, default=0.10)
    a = ap.parse_args()
    runs = [json.load(open(path))["table"] for path in (a.first, a.second)]
    if len(runs[0]) != len(runs[1]):
        print(f"the runs have {len(runs[0])} and {len(runs[1])} rows: not the same rows", file=sys.stderr)
    disagree = 0
    judged = 0
    number = ""
    out = []
    for r1, r2 in zip(*runs):
        number = r1[0] or number
        if shape(r1[1]) != shape(r2[1]):
            print(f"row {number}: '{r1[1]}' and '{r2[1]}' do not measure the same thing", file=sys.stderr)
            return 2
        v1, v2 = ratio_value(r1[4]), ratio_value(r2[4])
        if v1 is None or v2 is None:
            continue
        bigger = max(abs(v1), abs(v2))
        allowance = allowance_us(r1[5])
        scale = allowance if allowance is not None else bigger
        diff = abs(v1 - v2) / scale if scale else 0.0
        unjudged = any(m in r1[5] for m in ("(placement)", "(baselines)", "(tail)", "(reference)", "(floor)",
                                            "(journald)", "(idle)"))
        verdict = "not judged" if unjudged else ("agree" if diff <= a.within else "DIFFER")
        if not unjudged:
            judged += 1
            disagree += verdict == "DIFFER"
        of = "" if allowance is None else f" of {allowance:g} µs"
        out.append((number, r1[1][:90], r1[4].split("(")[0].strip(), r2[4].split("(")[0].strip(),
                    f"{diff * 100:.1f}%{of}", verdict))
    head = ("#", "measure", "run 1", "run 2", "difference", "")
    widths = [max(len(r[i]) for r in [head] + out) for i in range(len(head))]
    for r in [head] + out:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print(f"\n{judged - disagree} of {judged} ratios agree within {a.within * 100:.0f}%"
          + ("" if not disagree else f"; {disagree} differ"))
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
