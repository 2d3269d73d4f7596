#!/usr/bin/env python3
"""The ratios of bench/dist.sh's run (issue 14, "Performance";
docs/benchmarks.md, "Data parallelism"): reads the run's JSON lines on
stdin, in the order they were taken, and prints one "dist_ratio" line per
comparison:

  paddle.c DP / one process    goal 0.9: the DP run right after a
                               one-process run (the first such pair);
  paddle.c TP, TP+SP, DP x TP / one process (reported, no goal);
  paddle.c / each peer         per peer configuration, paddle.c's matching
                               run (DP for a data-parallel peer, TP for a
                               tensor-parallel one, DP x TP, one process)
                               taken just before and just after the peer
                               (dist.sh interleaves them): their mean over
                               the peer's tokens/s; goal 1.3 for DP against
                               a DistributedDataParallel peer.

Every line names both sides' runs, their tokens/s and the load average of
the run's start. Standard library only.
"""
import json
import sys

# paddle.c's run that a peer's configuration is compared with (dp=N: dist.sh's
# PD_DIST_NP, the first argument)
NP = sys.argv[1] if len(sys.argv) > 1 else "2"
OURS = {"dp": "paddlec train --mesh dp=" + NP, "tp": "paddlec train --mesh tp=2",
        "dptp": "paddlec train --mesh dp=2,tp=2", "one": "paddlec train"}
KIND = {"pytorch-ddp": "dp", "paddle-dp": "dp", "paddle-auto": "dp", "paddle-auto-static": "dp",
        "paddle-auto-tp": "tp", "paddle-auto-dptp": "dptp", "pytorch": "one", "paddle": "one"}
GOAL = {"pytorch-ddp": 1.3}


def name(r):
    if r["impl"] == "paddle.c":
        return "paddle.c " + r["run"]
    fw = "PyTorch %s" % r["torch"] if "torch" in r else "PaddlePaddle %s" % r.get("paddle", "?")
    return "%s %s (%d x %d)" % (fw, r.get("run", r["impl"]), r["world_size"], r["threads"])


def main():
    rows = []
    for line in sys.stdin:
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    rows = [r for r in rows if r.get("bench") == "train_llama_dp" and "tokens_per_s" in r
            and not r.get("variant_probe") and not r.get("best")]
    ours = [(i, r) for i, r in enumerate(rows) if r["impl"] == "paddle.c"]

    def emit(what, a, b, q, **kw):
        print(json.dumps(dict(bench="dist_ratio", what=what, numerator=a, denominator=b, ratio=round(q, 3), **kw)),
              flush=True)

    # paddle.c against one process: the first run of each kind right after a one-process run
    for kind in (OURS["dp"], OURS["tp"], OURS["tp"] + " --sp", OURS["dptp"]):
        pair = next(((a, b) for (_, a), (_, b) in zip(ours, ours[1:])
                     if a["run"] == "paddlec train" and b["run"] == kind), None)
        if pair is None:  # not adjacent: the first of each
            one = next((r for _, r in ours if r["run"] == "paddlec train"), None)
            b = next((r for _, r in ours if r["run"] == kind), None)
            pair = (one, b) if one and b else None
        if pair:
            one, b = pair
            q = b["tokens_per_s"] / one["tokens_per_s"]
            kw = dict(goal=0.9, met=q >= 0.9) if kind == OURS["dp"] else {}
            emit("%s / %s" % (name(b), name(one)), b["tokens_per_s"], one["tokens_per_s"], q, **kw)
    # paddle.c against each peer: its matching run just before and just after
    for i, r in enumerate(rows):
        kind = KIND.get(r["impl"])
        if kind is None:
            continue
        label = OURS[kind]
        before = [o for j, o in ours if j < i and o["run"] == label][-1:]
        after = [o for j, o in ours if j > i and o["run"] == label][:1]
        near = before + after
        if not near:
            continue
        tps = [o["tokens_per_s"] for o in near]
        q = sum(tps) / len(tps) / r["tokens_per_s"]
        kw = dict(goal=GOAL[r["impl"]], met=q >= GOAL[r["impl"]]) if r["impl"] in GOAL and kind == "dp" else {}
        emit("%s / %s" % (name(near[0]), name(r)), tps, r["tokens_per_s"], q, interleaved=len(near) == 2, **kw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
