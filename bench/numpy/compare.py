#!/usr/bin/env python3
"""Joins numpy baseline lines with smemkit cpu_bench lines and prints a Markdown table.

    python3 bench/numpy/compare.py FILE.jsonl [FILE.jsonl ...]

Lines are told apart by `impl` (numpy.* or smemkit/*). Each workload is reduced over all lines:
smemkit by the median of its GB/s (repeated sweeps), numpy by the best (fastest) of its runs, so
the ratio is conservative when the machine is noisy.
"""
import json
import statistics
import sys


def main():
    ours, theirs = {}, {}
    for p in sys.argv[1:]:
        for line in open(p):
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            side = theirs if r["impl"].startswith("numpy") else ours
            side.setdefault((r["dtype"], r["dist"], r["nbins"]), []).append(r["gbps"])
    print("| dtype | dist | nbins | numpy GB/s (best) | smemkit GB/s (median) | ratio | 10x |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for key in sorted(ours, key=lambda k: (k[0] != "int32", k[1] != "uniform", k[2])):
        if key not in theirs:
            continue
        t, o = max(theirs[key]), statistics.median(ours[key])
        r = o / t
        print(f"| {key[0]} | {key[1]} | {key[2]} | {t:.3f} | {o:.3f} | {r:.1f} | {'yes' if r >= 10 else 'no'} |")


if __name__ == "__main__":
    main()
