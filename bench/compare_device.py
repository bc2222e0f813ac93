"""Join `hist_device` rows (ours from `smemkit bench --op hist-device`, the peers from
bench/peers_device.py) per workload (dtype, dist, nbins, n) and print our plain call, our replayed
graph and the fastest correct peer in milliseconds, with the peer's time over ours.

Usage: python3 bench/compare_device.py OURS.jsonl PEERS.jsonl
"""
import json
import sys


def main():
    best = {}
    for path in sys.argv[1:]:
        for line in open(path):
            line = line.strip()
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if row.get("op") != "hist_device" or row.get("correct") is not True:
                continue
            k = (row["dtype"], row["dist"], row["nbins"], row["n"])
            impl = row["impl"]
            who = impl if impl.startswith("smemkit") else "peer"
            slot = best.setdefault(k, {})
            if who not in slot or row["ms"] < slot[who]["ms"]:
                slot[who] = row
    print(f"{'dtype':8} {'dist':8} {'nbins':>8} {'n':>10} {'auto ms':>9} {'graph ms':>9} {'nodes':>5} {'best peer':>24} {'peer/auto':>9}")
    for k in sorted(best):
        s = best[k]
        ours, graph, peer = s.get("smemkit/auto"), s.get("smemkit/auto+graph"), s.get("peer")
        o = f"{ours['ms']:9.4f}" if ours else f"{'-':>9}"
        g = f"{graph['ms']:9.4f}" if graph else f"{'-':>9}"
        nodes = str(graph.get("graph_nodes")) if graph else "-"
        p = f"{peer['ms']:9.4f} {peer['impl'][:14]:>14}" if peer else f"{'-':>24}"
        ratio = f"{peer['ms'] / ours['ms']:9.2f}" if ours and peer else f"{'-':>9}"
        print(f"{k[0]:8} {k[1]:8} {k[2]:>8} {k[3]:>10} {o} {g} {nodes:>5} {p} {ratio}")


if __name__ == "__main__":
    main()
