"""Calibrate the SimHash near-duplicate threshold on the sandbox (docs/recrawl.md).

Positives: each sandbox content page against each of its near-duplicates by construction
(:data:`courtly.sandbox.near_duplicates.VARIANT_KINDS` but the looser ``words_5pct``,
reported apart). Negatives: every pair of different pages, split by their 5-word shingle
resemblance J: ``disjoint`` (J < 0.05: their prose windows do not overlap) and
``overlapping`` (0.05 <= J < 0.8: one shares a passage with the other); pairs of
different pages with J >= 0.8 are near-duplicates in all but name and are counted apart,
in neither class. Prints each class's Hamming-distance distribution and, per threshold k
(a pair within k bits is called a near-duplicate), recall, false positives and
precision.

    python benchmarks/simhash_calibration.py [--pages 300] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time

from courtly.parse.fingerprint import hamming, simhash64
from courtly.sandbox.near_duplicates import (
    VARIANT_KINDS,
    resemblance,
    sandbox_texts,
    variant,
)
from courtly.sandbox.spec import SandboxSpec

LOOSE = "words_5pct"


def quantiles(values: list[int]) -> dict[str, int]:
    ordered = sorted(values)

    def at(q: float) -> int:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"min": ordered[0], "p1": at(0.01), "p50": at(0.5), "p99": at(0.99), "max": ordered[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300, help="sandbox content pages")
    parser.add_argument("--json", action="store_true", help="one JSON line")
    args = parser.parse_args()
    started = time.perf_counter()
    spec = SandboxSpec(n_sites=12, hosts_per_site=3, pages_per_host=10)
    texts = sandbox_texts(spec, args.pages)
    prints = [simhash64(text) for _, text in texts]
    positives: dict[str, list[int]] = {kind: [] for kind in VARIANT_KINDS}
    for index, (_, text) in enumerate(texts):
        for kind in VARIANT_KINDS:
            positives[kind].append(hamming(prints[index], simhash64(variant(text, kind, index))))
    negatives: dict[str, list[int]] = {"disjoint": [], "overlapping": [], "same_window": []}
    for a, b in itertools.combinations(range(len(texts)), 2):
        j = resemblance(texts[a][1], texts[b][1])
        group = "disjoint" if j < 0.05 else "overlapping" if j < 0.8 else "same_window"
        negatives[group].append(hamming(prints[a], prints[b]))
    near = [d for kind in VARIANT_KINDS if kind != LOOSE for d in positives[kind]]
    distinct = negatives["disjoint"] + negatives["overlapping"]
    rows = []
    for k in range(13):
        found = sum(d <= k for d in near)
        false = sum(d <= k for d in distinct)
        rows.append(
            {
                "k": k,
                "recall": round(found / len(near), 4),
                "recall_by_kind": {
                    kind: round(sum(d <= k for d in positives[kind]) / len(positives[kind]), 4)
                    for kind in VARIANT_KINDS
                },
                "false_positives": false,
                "false_positives_disjoint": sum(d <= k for d in negatives["disjoint"]),
                "precision": round(found / (found + false), 4) if found + false else 1.0,
            }
        )
    result = {
        "pages": len(texts),
        "words_median": statistics.median(len(t.split()) for _, t in texts),
        "pairs": {
            **{kind: len(v) for kind, v in positives.items()},
            **{group: len(v) for group, v in negatives.items()},
        },
        "distances": {
            **{kind: quantiles(v) for kind, v in positives.items()},
            **{group: quantiles(v) for group, v in negatives.items() if v},
        },
        "thresholds": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['pages']} pages, median {result['words_median']} words")
    print(f"pairs {result['pairs']}")
    for name, q in result["distances"].items():  # type: ignore[attr-defined]
        print(f"  {name:>17}: {q}")
    for row in rows:
        print(
            f"  k={row['k']:>2}: recall {row['recall']:.3f} {row['recall_by_kind']}, "
            f"false positives {row['false_positives']} "
            f"(disjoint {row['false_positives_disjoint']}), precision {row['precision']:.4f}"
        )


if __name__ == "__main__":
    main()
