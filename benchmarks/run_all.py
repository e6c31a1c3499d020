"""``make bench``: run every benchmark script present, collect their JSON, table and plot.

Each script in :data:`SCRIPTS` that exists in ``benchmarks/`` runs as a child
process with ``--json`` (plus the arguments listed there, chosen to keep a full
run under about ten minutes on a 2-core machine); its last stdout line is one
JSON object. ``compare_scrapy`` (the sandbox scenarios, with the bare fetch loop
as the machine's ceiling) runs first, while the machine is as quiet as it gets.
Everything goes to ``benchmarks/out/results.json``; the markdown
table to ``benchmarks/out/results.md`` and into ``docs/benchmarks.md`` between
the ``results:begin``/``results:end`` markers (and key figures into the README's
block); the plot to
``benchmarks/results.png``.

    python benchmarks/run_all.py            # everything (~20 minutes)
    python benchmarks/run_all.py --quick    # smaller webs, short runs (~8 minutes)
    python benchmarks/run_all.py --only compare_scrapy,urls
    python benchmarks/run_all.py --scenario wide,broad   # some sandbox scenarios only
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
    "compare_scrapy": ([], ["--quick"], 2400),
    # Rates and bytes per URL: half the script's default sizes measure the same figures
    # (its default alone took 452 s at a load of 19, over this timeout).
    "frontier": (
        ["--urls", "500000", "--cycles", "100000"],
        ["--urls", "200000", "--hosts", "2000", "--cycles", "50000"],
        300,
    ),
    "robots": ([], [], 120),
    "urls": ([], ["--repeat", "3"], 120),
    "fetch": (
        ["--requests", "10000", "--warmup", "1000"],
        ["--requests", "5000", "--warmup", "500"],
        120,
    ),
    "sqlite_store": (
        ["--urls", "2000000", "--hosts", "20000", "--resume-urls", "1000000"],
        ["--urls", "200000", "--hosts", "2000", "--cycles", "20000", "--resume-urls", "100000"],
        420,
    ),
}
CRAWLER_LABELS = {
    "bare": "bare loop (ceiling)",
    "floor": "floor (bare loop + a page's least work)",
    "courtly": "courtly (defaults)",
    "courtly_tuned": "courtly tuned",
    "scrapy": "Scrapy",
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
    """The sandbox table, one row per scenario and crawler, then the flags and the targets."""
    lines = [
        "| scenario | crawler | pages/s | share of ceiling | CPU ms / page | CPU (cores) "
        "| peak RSS (MB) | coverage | violations | bound (pages/s) | efficiency |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, scen in result.get("scenarios", {}).items():
        for crawler, label in CRAWLER_LABELS.items():
            row = scen.get(crawler)
            if row is None:
                continue
            kinds = {k: v for k, v in row.get("violations_by_kind", {}).items() if v}
            detail = (
                f" ({', '.join(f'{k} {v}' for k, v in kinds.items())})"
                if kinds and row["violations"]
                else ""
            )
            if crawler in ("bare", "floor"):
                label += ", ran out of pages" if row.get("exhausted") else ""
                passes = int(row.get("passes", 1))
                label += f", {passes} passes over the pages" if passes > 1 else ""
                detail = " (impolite by design)" if row["violations"] else ""
            cov = f"{row['coverage']:.1%}" if row.get("coverage") is not None else "–"
            # The hostile web's bound ignores legitimate retries of robots.txt and redirects.
            bound = _fmt(row.get("bound_pages_per_s")) if name != "hostile" else "–"
            eff = row.get("efficiency")
            eff_text = f"{eff:.1%}" if eff is not None and name != "hostile" else "–"
            share = row.get("share_of_ceiling")
            lines.append(
                f"| {name} | {label} | {_fmt(row.get('pages_per_s'))} "
                f"| {_fmt(share) if share is not None else '–'} "
                f"| {_fmt(row.get('cpu_ms_per_page'))} | {_fmt(row.get('cpu_cores'))} "
                f"| {row['peak_rss_bytes'] / 1e6:.0f} | {cov} "
                f"| {row['violations']}{detail} | {bound} | {eff_text} |"
            )
    lines.append("")
    lines.extend(flags_lines(result))
    for name in ("wide", "broad"):
        speedup = result.get("scenarios", {}).get(name, {}).get("speedup_vs_scrapy")
        if speedup is not None:
            title = name.capitalize()
            lines.append(f"{title} scenario: courtly / Scrapy pages/s = **{speedup}×**.")
            lines.append("")
    targets = result.get("targets")
    if targets:
        lines.append("| target | met |")
        lines.append("|---|---|")
        labels = {
            "wide_share_of_ceiling_ge_one_third": "wide: ≥ 1/3 of the bare loop's pages/s",
            "wide_ge_25x_scrapy": "wide: ≥ 25× Scrapy's pages/s",
            "broad_share_of_ceiling_ge_0_27": "broad: ≥ 0.27 of the bare loop's pages/s",
            "cpu_per_page_le_5_5x_ceiling": "CPU per page ≤ 5.5× the bare loop's (wide, broad)",
            "zero_violations": "zero politeness violations (courtly, every scenario)",
            "politeness_efficiency_ge_97pct": "politeness: ≥ 97% of the politeness bound",
            "politeness_efficiency_phase_mean_ge_97pct": (
                "politeness: ≥ 97% of the bound, averaged over where the window ends"
            ),
            "broad_ge_10x_scrapy": "broad: ≥ 10× Scrapy's pages/s (earlier target)",
            "broad_ge_1800_pages_per_s": "broad: ≥ 1,800 pages/s (earlier target)",
        }
        for key, met in targets.items():
            lines.append(f"| {labels.get(key, key)} | {_fmt(met)} |")
    return lines


def flags_lines(result: dict[str, Any]) -> list[str]:
    """Which flags courtly ran with, and the machine's ceiling per scenario, in this run."""
    scenarios = result.get("scenarios", {})
    if not scenarios:
        return []
    flag_sets: dict[str, list[str]] = {}
    tuned: dict[str, list[str]] = {}
    for name, scen in scenarios.items():
        flag_sets.setdefault(scen.get("courtly_flags", "?"), []).append(name)
        if scen.get("courtly_tuned_flags") and "courtly_tuned" in scen:
            tuned.setdefault(scen["courtly_tuned_flags"], []).append(name)
    lines = ["courtly ran with its defaults; the only flags were those the sandbox needs:"]
    lines.extend(f"`{flags}` ({', '.join(names)})" for flags, names in flag_sets.items())
    lines.append("")
    for flags, names in tuned.items():
        lines.append(f"The run labelled tuned added `{flags}` ({', '.join(names)}).")
        lines.append("")
    ceilings = [
        f"{name} {_fmt(scen['ceiling_pages_per_s'])} pages/s "
        f"({_fmt(scen.get('ceiling_cpu_ms_per_page'))} CPU ms a page)"
        for name, scen in scenarios.items()
        if scen.get("ceiling_pages_per_s")
    ]
    ratios = [
        f"{name} {scen['courtly']['cpu_ms_per_page'] / scen['ceiling_cpu_ms_per_page']:.1f}×"
        for name, scen in scenarios.items()
        if scen.get("ceiling_cpu_ms_per_page")
        and (scen.get("courtly") or {}).get("cpu_ms_per_page")
    ]
    if ratios:
        ceilings.append("courtly's CPU per page against the bare loop's: " + ", ".join(ratios))
    floors = [
        f"{name} {scen['floor_cpu_over_bare']}× the bare loop's, courtly "
        f"{scen['courtly_cpu_over_floor']}× the floor's"
        for name, scen in scenarios.items()
        if scen.get("floor_cpu_over_bare") and scen.get("courtly_cpu_over_floor")
    ]
    if floors:
        ceilings.append(
            "the floor's CPU per page (the bare loop doing a page's least work: links, "
            "WARC, SQLite; benchmarks/page_work.py): " + "; ".join(floors)
        )
    load = result.get("machine", {}).get("load_average")
    if load:
        ceilings.append(
            f"load average at the start {load[0]:.1f} on {result['machine']['cpus']} CPUs"
        )
    if ceilings:
        lines.append(
            "The machine's ceiling in this run (the bare fetch loop: aiohttp + uvloop, two "
            "processes, the known pages of the same web, no politeness, parsing or storage): "
            + "; ".join(ceilings)
            + "."
        )
        lines.append("")
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
    bench = results["benchmarks"]
    commit = bench.get("compare_scrapy", {}).get("commit")
    lines = [
        f"Run {results['finished_at']} on {results['machine']['cpus']} CPUs "
        f"({results['machine']['platform']}, Python {results['machine']['python']})"
        + (f" at commit `{commit}`" if commit else "")
        + f"; `{results['command']}`.",
        "",
    ]
    if "compare_scrapy" in bench:
        lines.append("### The sandbox scenarios (`benchmarks/compare_scrapy.py`)")
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
    commit = bench.get("compare_scrapy", {}).get("commit")
    lines = [
        f"Run {results['finished_at']} on {results['machine']['cpus']} CPUs"
        + (f" at commit `{commit}`" if commit else "")
        + f", `{results['command']}` (details: `docs/benchmarks.md`).",
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
    parser.add_argument("--scenario", help="compare_scrapy's scenarios (comma-separated)")
    parser.add_argument("--no-doc", action="store_true", help="leave docs/benchmarks.md alone")
    parser.add_argument(
        "--render-only", action="store_true", help="redo table, doc and plot from results.json"
    )
    args = parser.parse_args(argv)
    if args.render_only:
        return render(json.loads((OUT / "results.json").read_text()), not args.no_doc)
    wanted = set(args.only.split(",")) if args.only else set(SCRIPTS)
    command = "python benchmarks/run_all.py" + (" --quick" if args.quick else "")
    command += f" --scenario {args.scenario}" if args.scenario else ""
    results: dict[str, Any] = {
        "command": command,
        "machine": {
            "cpus": __import__("os").cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "benchmarks": {},
    }
    for name, (full, quick, timeout_s) in SCRIPTS.items():
        if name in wanted and (HERE / f"{name}.py").exists():
            script_args = quick if args.quick else full
            if name == "compare_scrapy" and args.scenario:
                script_args = [*script_args, "--scenario", args.scenario]
            results["benchmarks"][name] = run_script(name, script_args, timeout_s)
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
