"""The results plot: courtly, Scrapy and the bare loop per scenario, from ``results.json``.

Three panels: pages/s (log scale, with the scenario's politeness bound; the bare
fetch loop is the machine's ceiling), CPU milliseconds per page, and politeness
violations found in the sandbox's log (the bare loop is impolite by design).

    python benchmarks/plot.py [benchmarks/out/results.json] [-o benchmarks/results.png]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COLOURS = {
    "bare": "#9a9a9a",
    "courtly": "#2a6f97",
    "courtly_tuned": "#61a5c2",
    "scrapy": "#c8553d",
}
LABELS = {"bare": "bare loop (ceiling)", "courtly_tuned": "courtly tuned"}


def comparison_of(results: dict[str, Any]) -> dict[str, Any]:
    """The ``compare_scrapy`` entry of a ``run_all`` results file (or a bare one)."""
    if results.get("benchmark") == "compare_scrapy":
        return results
    found: dict[str, Any] = results.get("benchmarks", {}).get("compare_scrapy", {})
    return found


def plot(results: dict[str, Any], out: Path) -> Path | None:
    """Write the PNG to ``out``; None (and nothing written) if there is nothing to plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comparison = comparison_of(results)
    scenarios: dict[str, Any] = comparison.get("scenarios", {})
    names = [n for n in scenarios if any(c in scenarios[n] for c in COLOURS)]
    if not names:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    panels = (
        ("pages_per_s", "pages/s (log)", True),
        ("cpu_ms_per_page", "CPU ms per page", False),
        ("violations", "politeness violations", False),
    )
    crawlers = [c for c in COLOURS if any(c in scenarios[n] for n in names)]
    width = 0.84 / len(crawlers)
    for ax, (key, title, log) in zip(axes, panels, strict=True):
        for k, crawler in enumerate(crawlers):
            offset = (k - (len(crawlers) - 1) / 2) * width
            xs, ys = [], []
            for i, name in enumerate(names):
                if key == "violations" and crawler == "bare":
                    continue  # impolite by design
                value = scenarios[name].get(crawler, {}).get(key)
                if value is not None:
                    xs.append(i + offset)
                    ys.append(float(value))
            label = LABELS.get(crawler, crawler)
            bars = ax.bar(xs, ys, width, label=label, color=COLOURS[crawler])
            ax.bar_label(bars, labels=[_short(y) for y in ys], fontsize=7, padding=2)
        if key == "pages_per_s":
            for i, name in enumerate(names):
                limit = scenarios[name].get("bound_pages_per_s") if name != "hostile" else None
                if limit:
                    ax.hlines(limit, i - 0.45, i + 0.45, colors="black", linestyles="dashed")
            ax.plot([], [], "k--", label="politeness bound")
        if log:
            ax.set_yscale("log")
        ax.set_xticks(range(len(names)), names)
        ax.set_title(title)
        ax.margins(y=0.15)
    axes[0].legend(fontsize=8, loc="lower left")
    machine = comparison.get("machine", {})
    fig.suptitle(
        f"courtly (defaults) vs Scrapy and the bare fetch loop on the sandbox webs, "
        f"{machine.get('cpus', '?')} CPUs, commit {comparison.get('commit', '?')}"
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _short(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if value else "0"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("results", type=Path, nargs="?", default=HERE / "out" / "results.json")
    parser.add_argument("-o", "--output", type=Path, default=HERE / "results.png")
    args = parser.parse_args(argv)
    written = plot(json.loads(args.results.read_text()), args.output)
    print(written if written is not None else "nothing to plot")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
