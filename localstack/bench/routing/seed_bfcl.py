"""The seed's ExpertGate design (seed_gate.py) on BFCL v4's function-selection
sets, for the side-by-side table of bfcl.sh (make bench-routing).

It scores the teams bfclbench exports (-teams FILE: one JSON line per entry
with its question, gold agent and agents' one skill each), so the seed and
the gate see exactly the same mapping. Each team is scored by seed_gate's
SeedGate as the seed design does: TF-IDF skill match (the skill's document is
its name, description and keywords, as the seed writes a skill), past
performance, personality fit and load, weights 0.40/0.25/0.20/0.15; with no
ratings (performance 0.7, the neutral default), a neutral personality (0.5 on
each scale) and idle agents (load 1). A question is declined when the best
agent's overall score is below the threshold (the seed's 0.6), the decline
rule the gate's table applies to its Confidence.

Usage: seed_bfcl.py TEAMS.jsonl [--json OUT]
"""
import argparse
import json
import sys
import time

from seed_gate import SeedGate

THRESHOLD = 0.6
SWEEP = [k / 100 for k in range(30, 81, 5)]
# (set, answerable, role), in the order of the gate's table.
SETS = [("multiple", True, "tuning"), ("irrelevance", False, "tuning"),
        ("live_multiple", True, "held out"), ("live_irrelevance", False, "held out")]
NEUTRAL = (0.5, 0.5, 0.5)
IDLE = (0, 0, 0)
# SeedGate needs at least one rating (scikit-learn refuses to transform an
# empty list), so every team gets one that never counts: older than the
# seed's 30-day window, for a question with no words. Past performance is
# then the neutral 0.7 for every agent, as with no ratings at all.
STALE = 31 * 86400


def outcome(team, now):
    """(best overall score, rank of the gold agent or 0) for one team."""
    if not team["agents"]:
        return 0.0, 0  # nothing to route to: always declined
    gate_team = [{
        "slug": a["slug"],
        "personality": NEUTRAL,
        "skills": [" ".join([a["skill"], a["description"], " ".join(a["keywords"] or [])])],
        "load": IDLE,
    } for a in team["agents"]]
    gate = SeedGate(gate_team, [(gate_team[0]["slug"], 3, "", now - STALE)])
    ranked = gate.score(team["query"], now)  # [(overall, slug)], best first
    rank = next((i + 1 for i, (_, slug) in enumerate(ranked) if slug == team["gold"]), 0)
    return ranked[0][0], rank


def point(answerable, outs, threshold):
    n = len(outs)
    declined = sum(1 for best, _ in outs if best < threshold)
    if not answerable:
        return {"threshold": threshold, "declined": declined / n}
    routed = sum(1 for best, rank in outs if best >= threshold and rank == 1)
    return {"threshold": threshold, "false_declined": declined / n, "routed": routed / n}


def measure(name, answerable, role, outs):
    n = len(outs)
    m = {"set": name, "role": role, "n": n}
    if answerable:
        m["top1"] = sum(1 for _, rank in outs if rank == 1) / n
        m["mrr"] = sum(1 / rank for _, rank in outs if rank) / n
    m["at_default_threshold"] = point(answerable, outs, THRESHOLD)
    m["sweep"] = [point(answerable, outs, t) for t in SWEEP]
    return m


def pct(v):
    return "-" if v is None else f"{100 * v:.1f}%"


def print_tables(all_sets):
    """The gate's table layout (bfclbench's printTables)."""
    at = f"{THRESHOLD:g}"
    print(f"{'set':<27} {'n':>5} {'top1':>7} {'mrr':>7}  declined@{at}|false-declined@{at}")
    for m in all_sets:
        p = m["at_default_threshold"]
        last = pct(p["false_declined"]) + " false-declined" if "false_declined" in p else pct(p["declined"]) + " declined"
        mrr = "-" if "mrr" not in m else f"{m['mrr']:.3f}"
        print(f"{m['set'] + ' (' + m['role'] + ')':<27} {m['n']:>5} {pct(m.get('top1')):>7} {mrr:>7}  {last}")
    print("sweep: declined (irrelevance sets), false-declined and routed = ranked first and not declined (answerable sets)")
    cols = []
    for si, m in enumerate(all_sets):
        short = m["set"].replace("irrelevance", "irr").replace("multiple", "mult")
        keys = ["false_declined", "routed"] if "top1" in m else ["declined"]
        for k in keys:
            cols.append((si, short + ":" + {"false_declined": "false"}.get(k, k), k))
    print(f"{'thr':<5}" + "".join(f" {head:>{max(len(head), 7)}}" for _, head, _ in cols))
    for i, p in enumerate(all_sets[0]["sweep"]):
        print(f"{p['threshold']:<5.2f}" + "".join(
            f" {pct(all_sets[si]['sweep'][i][k]):>{max(len(head), 7)}}" for si, head, k in cols))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("teams")
    ap.add_argument("--json")
    args = ap.parse_args()
    by_set = {}
    with open(args.teams) as f:
        for line in f:
            team = json.loads(line)
            by_set.setdefault(team["set"], []).append(team)
    start, now = time.perf_counter(), time.time()
    all_sets = []
    for name, answerable, role in SETS:
        if name in by_set:
            all_sets.append(measure(name, answerable, role, [outcome(t, now) for t in by_set[name]]))
    elapsed = time.perf_counter() - start
    entries = sum(m["n"] for m in all_sets)
    print(f"The seed's design (seed_gate.SeedGate, scikit-learn TF-IDF; decline when overall < threshold): "
          f"{entries} entries in {elapsed:.1f} s")
    print_tables(all_sets)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gate": "seed", "seconds": elapsed, "sets": all_sets}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
