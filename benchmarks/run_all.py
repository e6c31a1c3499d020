"""``make bench``: run every benchmark script present, collect their JSON, table and plot.

Each script in :data:`SCRIPTS` that exists in ``benchmarks/`` runs as a child
process with ``--json`` (plus the arguments listed there, chosen to keep a full
run under about ten minutes on a 2-core machine); its last stdout line is one
JSON object. Everything goes to ``benchmarks/out/results.json``; the markdown
table to ``benchmarks/out/results.md`` and into ``docs/benchmarks.md`` between
the ``results:begin``/``results:end`` markers (and key figures into the README's
block); the plot to
``benchmarks/results.png``.

    python benchmarks/run_all.py            # everything (~8-10 minutes)
    python benchmarks/run_all.py --quick    # short runs (~3 minutes)
    python benchmarks/run_all.py --only compare_scrapy,urls
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
DOC = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"

#: script -> (arguments for a full run, arguments with --quick, timeout seconds)
SCRIPTS: dict[str, tuple[list[str], list[str], float]] = {
    "frontier": ([], ["--urls", "200000", "--hosts", "2000", "--cycles", "50000"], 300),
    "robots": ([], [], 120),
    "urls": ([], ["--repeat", "3"], 120),
    "fetch": ([], ["--requests", "5000", "--warmup", "500"], 120),
    "sqlite_store": (
        ["--urls", "2000000", "--hosts", "20000", "--resume-urls", "1000000"],
        ["--urls", "200000", "--hosts", "2000", "--cycles", "20000", "--resume-urls", "100000"],
        420,
    ),
    "compare_scrapy": (["--scenario", "all", "--seconds", "30"], ["--quick"], 900),
}


def run_script(name: str, args: list[str], timeout_s: float) -> dict[str, Any]:
    """Run ``benchmarks/<name>.py --json ARGS``; its JSON, or an ``error`` entry."""
    cmd = [sys.executable, str(HERE / f"{name}.py"), "--json", *args]
    print(f"== {name}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    elapsed = time.monotonic() - started
    sys.stderr.write(proc.stderr[-2000:])
    for line in reversed(proc.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data: dict[str, Any] = json.loads(line)
            except ValueError:
                continue
            data.setdefault("_elapsed_s", round(elapsed, 1))
            return data
    return {"error": f"exit {proc.returncode}, no JSON on stdout", "_elapsed_s": round(elapsed, 1)}


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def comparison_table(result: dict[str, Any]) -> list[str]:
    """The courtly-vs-Scrapy table, one row per scenario and crawler."""
    lines = [
        "| scenario | crawler | pages/s | CPU s / 1000 pages | peak RSS (MB) | coverage "
        "| violations | bound (pages/s) | efficiency |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, scen in result.get("scenarios", {}).items():
        for crawler in ("courtly", "scrapy"):
            row = scen.get(crawler)
            if row is None:
                continue
            kinds = {k: v for k, v in row.get("violations_by_kind", {}).items() if v}
            detail = (
                f" ({', '.join(f'{k} {v}' for k, v in kinds.items())})"
                if kinds and row["violations"]
                else ""
            )
            cov = f"{row['coverage']:.1%}" if row.get("coverage") is not None else "–"
            # Efficiency against the bound means something where politeness is the limit.
            eff = f"{row['efficiency']:.1%}" if name == "politeness" else "–"
            # The hostile web's bound ignores legitimate retries of robots.txt and redirects.
            bound = _fmt(row.get("bound_pages_per_s")) if name != "hostile" else "–"
            lines.append(
                f"| {name} | {crawler} | {_fmt(row.get('pages_per_s'))} "
                f"| {_fmt(row.get('cpu_s_per_1000_pages'))} "
                f"| {row['peak_rss_bytes'] / 1e6:.0f} | {cov} "
                f"| {row['violations']}{detail} | {bound} "
                f"| {eff} |"
            )
    speedup = result.get("scenarios", {}).get("broad", {}).get("speedup_vs_scrapy")
    if speedup is not None:
        lines.append("")
        lines.append(f"Broad scenario: courtly / Scrapy pages/s = **{speedup}×**.")
    targets = result.get("targets")
    if targets:
        lines.append("")
        lines.append("| target | met |")
        lines.append("|---|---|")
        labels = {
            "zero_violations": "zero politeness violations (courtly, every scenario)",
            "politeness_efficiency_ge_97pct": "≥ 97% of the politeness bound",
            "broad_ge_10x_scrapy": "broad: ≥ 10× Scrapy's pages/s",
            "broad_ge_1800_pages_per_s": "broad: ≥ 1,800 pages/s",
        }
        for key, met in targets.items():
            lines.append(f"| {labels.get(key, key)} | {_fmt(met)} |")
    return lines


def _leaves(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, dict):
        out: list[tuple[str, Any]] = []
        for key, value in data.items():
            if not str(key).startswith("_"):
                out.extend(_leaves(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(data, bool | int | float):
        return [(prefix, data)]
    return []


def markdown(results: dict[str, Any]) -> str:
    """All tables: the comparison first, then one metric/value table per micro-benchmark."""
    lines = [
        f"Run {results['finished_at']} on {results['machine']['cpus']} CPUs "
        f"({results['machine']['platform']}, Python {results['machine']['python']}); "
        f"`{results['command']}`.",
        "",
    ]
    bench = results["benchmarks"]
    if "compare_scrapy" in bench:
        lines.append("### courtly vs Scrapy (`benchmarks/compare_scrapy.py`)")
        lines.append("")
        if "error" in bench["compare_scrapy"]:
            lines.append(f"failed: {bench['compare_scrapy']['error']}")
        else:
            lines.extend(comparison_table(bench["compare_scrapy"]))
        lines.append("")
    for name, data in bench.items():
        if name == "compare_scrapy":
            continue
        lines.append(f"### `benchmarks/{name}.py`")
        lines.append("")
        if "error" in data:
            lines.append(f"failed: {data['error']}")
            lines.append("")
            continue
        lines.append("| metric | value |")
        lines.append("|---|---:|")
        lines.extend(f"| {key} | {_fmt(value)} |" for key, value in _leaves(data)[:40])
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


#: README key figures: (benchmark, JSON key, label, target)
KEY_FIGURES: tuple[tuple[str, str, str, str], ...] = (
    ("frontier", "adds_per_s", "frontier adds, canonical URLs (/s)", ">= 200,000"),
    ("frontier", "adds_canonical_per_s", "frontier adds with canonicalisation (/s)", ">= 80,000"),
    ("frontier", "lease_complete_per_s", "frontier lease + complete (/s)", ">= 100,000"),
    ("frontier", "rss_bytes_per_queued_url", "frontier RSS per queued URL (bytes)", "<= 150"),
    ("robots", "allowed_per_s", "robots.txt allowed() on 300 rules (/s)", ">= 100,000"),
    ("sqlite_store", "sqlite_adds_per_s", "SQLite store adds (/s)", "-"),
    ("sqlite_store", "sqlite_lease_complete_per_s", "SQLite store lease + complete (/s)", "-"),
    ("sqlite_store", "resume_s_1m", "resume a 1,000,000-URL frontier (s)", "<= 5"),
)


def readme_block(results: dict[str, Any]) -> str:
    """The README's generated block: the comparison, the key figures, the plot."""
    bench = results["benchmarks"]
    lines = [
        f"Run {results['finished_at']} on {results['machine']['cpus']} CPUs, "
        f"`{results['command']}` (details: `docs/benchmarks.md`).",
        "",
    ]
    compare = bench.get("compare_scrapy")
    if compare is not None and "error" not in compare:
        lines.extend(comparison_table(compare))
        lines.append("")
    lines.append("| figure | measured | target |")
    lines.append("|---|---:|---:|")
    for name, key, label, target in KEY_FIGURES:
        data = bench.get(name)
        if data is None or "error" in data or key not in data:
            continue
        lines.append(f"| {label} | {_fmt(data[key])} | {target} |")
    lines.append("")
    lines.append("![courtly vs Scrapy](benchmarks/results.png)")
    return "\n".join(lines).rstrip() + "\n"


def update_doc(table: str, doc: Path = DOC) -> bool:
    """Replace the generated block of ``doc``; False if the markers are missing."""
    if not doc.exists():
        return False
    text = doc.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return False
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    doc.write_text(f"{head}{BEGIN}\n{table}{END}{tail}", encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="short runs of everything")
    parser.add_argument("--only", help="comma-separated script names")
    parser.add_argument("--no-doc", action="store_true", help="leave docs/benchmarks.md alone")
    parser.add_argument(
        "--render-only", action="store_true", help="redo table, doc and plot from results.json"
    )
    args = parser.parse_args(argv)
    if args.render_only:
        return render(json.loads((OUT / "results.json").read_text()), not args.no_doc)
    wanted = set(args.only.split(",")) if args.only else set(SCRIPTS)
    results: dict[str, Any] = {
        "command": "python benchmarks/run_all.py" + (" --quick" if args.quick else ""),
        "machine": {
            "cpus": __import__("os").cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "benchmarks": {},
    }
    for name, (full, quick, timeout_s) in SCRIPTS.items():
        if name in wanted and (HERE / f"{name}.py").exists():
            results["benchmarks"][name] = run_script(name, quick if args.quick else full, timeout_s)
    results["finished_at"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return render(results, not args.no_doc)


def render(results: dict[str, Any], write_doc: bool) -> int:
    """Table to results.md (and the doc), plot to results.png; 1 if a benchmark failed."""
    OUT.mkdir(parents=True, exist_ok=True)
    table = markdown(results)
    (OUT / "results.md").write_text(table, encoding="utf-8")
    print(table)
    sys.path.insert(0, str(HERE))
    from plot import plot

    png = plot(results, HERE / "results.png")
    print(f"results: {OUT / 'results.json'}, {OUT / 'results.md'}, plot: {png}", file=sys.stderr)
    if write_doc and not update_doc(table):
        print(f"note: {DOC} has no {BEGIN} block; not updated", file=sys.stderr)
    if write_doc and not update_doc(readme_block(results), README):
        print(f"note: {README} has no {BEGIN} block; not updated", file=sys.stderr)
    failed = [n for n, d in results["benchmarks"].items() if "error" in d]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
