# The reference for the ExpertGate benchmark: shared/bench/seed_gate.py from
# the project's shared folder (issue 10, item 5), copied unmodified below this
# comment. compare.sh runs it beside BenchmarkGateScore; requirements.txt pins
# what it imports.
"""The seed's ExpertGate design (seed 000, 7.1.2) ported to Python as its
authors would write it: scikit-learn TF-IDF for skill match and for the
similar-query filter of past performance (cosine > 0.8, 30 days, 0.7 default),
a lexical personality fit, the load formula, weights 0.40/0.25/0.20/0.15.
No network calls (the seed adds an embeddings call and a tier-0 classifier
call per query, which would only widen the gap). Inputs mirror Conclave's
Go benchmark (syntheticTeam, 200 ratings, the same query).

Usage: seed_gate.py N [ITER]  -> prints "N us_per_query"
"""
import sys
import time

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

TOPICS = ["code", "review", "security", "data", "sql", "design", "api", "writing", "docs", "cloud", "cost",
          "latency", "testing", "frontend", "mobile", "ml", "privacy", "billing", "support", "legal"]


def synthetic_team(n):
    team = []
    for i in range(n):
        a, b, c = TOPICS[i % 20], TOPICS[(i * 7 + 3) % 20], TOPICS[(i * 13 + 5) % 20]
        team.append({
            "slug": f"agent-{i:04d}",
            "personality": (i % 10 / 10, i % 7 / 7, i % 5 / 5),
            "skills": [
                f"{a}-{b} Handle {a} and {b} questions for product area {i} {a} {b}",
                f"{c}-ops Operate {c} workflows and answer {c} escalations {c}",
            ],
            "load": (i % 5, i % 11, (i % 20) * 100),
        })
    return team


class SeedGate:
    def __init__(self, team, ratings):
        self.team = team
        docs = [s for a in team for s in a["skills"]]
        self.owner = [k for k, a in enumerate(team) for _ in a["skills"]]
        self.vec = TfidfVectorizer(stop_words="english")
        self.skill_m = self.vec.fit_transform(docs)
        self.ratings = ratings
        self.rating_m = self.vec.transform([r[2] for r in ratings])

    def personality(self, query, p):
        q = query.lower()
        formality = 0.3 if "?" in q else 0.6
        humor = 0.1
        tech = min(1.0, sum(w in q for w in ("sql", "api", "latency", "deploy", "code")) / 3)
        return 1 - (0.3 * abs(formality - p[0]) + 0.2 * abs(humor - p[1]) + 0.5 * abs(tech - p[2]))

    def score(self, query, now):
        qv = self.vec.transform([query])
        sims = cosine_similarity(qv, self.skill_m)[0]
        best = np.zeros(len(self.team))
        np.maximum.at(best, self.owner, sims)
        rsims = cosine_similarity(qv, self.rating_m)[0]
        past = {}
        for (slug, rating, _q, at), s in zip(self.ratings, rsims):
            if s > 0.8 and now - at < 30 * 86400:
                past.setdefault(slug, []).append((rating - 1) / 4)
        out = []
        for k, a in enumerate(self.team):
            p = past.get(a["slug"])
            perf = sum(p) / len(p) if p else 0.7
            fit = self.personality(query, a["personality"])
            t, c, lat = a["load"]
            load = max(0.0, 1 - (0.5 * t / 5 + 0.3 * c / 20 + 0.2 * min(lat / 10000, 1)))
            overall = 0.40 * best[k] + 0.25 * perf + 0.20 * fit + 0.15 * load
            out.append((overall, a["slug"]))
        out.sort(reverse=True)
        return out


def main():
    n = int(sys.argv[1])
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    team = synthetic_team(n)
    now = time.time()
    ratings = [(team[i % n]["slug"], 1 + i % 5, f"review the sql api latency {i % 9}", now - 3600) for i in range(200)]
    gate = SeedGate(team, ratings)
    q = "Can you review the SQL behind our billing API? Latency doubled after the last deploy."
    gate.score(q, now)
    t0 = time.perf_counter()
    for _ in range(iters):
        s = gate.score(q, now)
        assert len(s) == n
    dt = (time.perf_counter() - t0) / iters
    print(n, round(dt * 1e6, 1))


if __name__ == "__main__":
    main()
