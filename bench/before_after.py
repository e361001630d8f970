"""./dev bench before and after a change: interp-rpc's numbers from an
earlier commit's build and from this tree's, side by side, in turns.

    ./dev run -- python3 bench/before_after.py REV [--runs 3] [--quick] [--out FILE.md]

REV (a commit, tag or branch) is exported into build/before-after/SHA and
built there with the CMake configuration ./dev uses. Then one benchmark,
this tree's bench/run.py with ``--only interp-rpc --no-dask``, runs with
REV's package and with this tree's, in turns (before, after, before,
after...), so that a slow moment of the machine falls on both sides. Each
cell is the median over a side's runs; the ratio is after over before. A
change counts only where the two sides' ranges do not overlap; anything
else is "within the spread".

Only the package changes between the sides: the harness, the workloads and
the Python are this tree's, so an old build is measured exactly as a new one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
#: Where earlier commits are exported and built, one directory per commit.
BUILDS = REPO / "build" / "before-after"
#: The contender this compares; the others do not change with our code.
CONTENDER = "interp-rpc"
#: Metrics that are numbers of the contender's speed (the rest count samples).
SPEED_UNITS = {"x", "s", "ms", "us", "items/s"}
#: Units where more is better.
MORE_IS_BETTER = {"x", "items/s"}


def commit_of(rev: str) -> str:
    result = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"before_after: {rev!r} is not a commit here: {result.stderr.strip()}")
    return result.stdout.strip()


def built_package(sha: str) -> Path:
    """The site-packages of ``sha``'s build, exported and built if needed."""
    home = BUILDS / sha
    source, build, stage = home / "src", home / "build", home / "stage"
    if not source.exists():
        # Exported beside, then renamed: an export cut short is never taken
        # for a whole one.
        home.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix="src.", dir=home))
        archive = subprocess.Popen(["git", "-C", str(REPO), "archive", sha],
                                   stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(partial)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit(f"before_after: git archive {sha} failed")
        partial.rename(source)
    if not (build / "build.ninja").exists():
        # As ./dev configures its build: Python's compilers, its pybind11.
        environment = os.environ | {
            "CC": os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc",
            "CXX": os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "c++"}
        pybind11 = subprocess.run([sys.executable, "-m", "pybind11", "--cmakedir"],
                                  capture_output=True, text=True).stdout.strip()
        subprocess.run(["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=RelWithDebInfo", f"-DCMAKE_INSTALL_PREFIX={stage}",
                        "-DINTERP_RPC_SANITIZE=OFF", "-DINTERP_RPC_TESTS=OFF",
                        *([f"-Dpybind11_DIR={pybind11}"] if pybind11 else [])],
                       check=True, env=environment, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build)], check=True)
    subprocess.run(["cmake", "--install", str(build)], check=True, stdout=subprocess.DEVNULL)
    return stage / "site-packages"


def bench_once(side: str, package: Path, quick: bool, out: Path) -> list[dict[str, Any]]:
    """One ./dev bench run of the interp-rpc contender with ``package``."""
    environment = os.environ | {"PYTHONPATH": str(package)}
    done = subprocess.run([sys.executable, str(BENCH / "run.py"), "--only", CONTENDER,
                           "--no-dask", "--out", str(out), *(["--quick"] if quick else [])],
                          env=environment, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise SystemExit(f"before_after: bench/run.py failed with the {side} package "
                         f"({package}), exit code {done.returncode}: see its output above")
    records: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))["results"]
    return records


@dataclass
class Number:
    """One of the contender's numbers: each side's values, a value per run."""

    label: str
    unit: str
    before: list[float]
    after: list[float]

    def verdict(self) -> str:
        if not self.before or not self.after:
            return "not measured on both sides"
        if max(self.before) < min(self.after) or max(self.after) < min(self.before):
            higher = statistics.median(self.after) > statistics.median(self.before)
            better = higher == (self.unit in MORE_IS_BETTER)
            return "better after" if better else "**worse after**"
        return "within the spread"


def numbers(before: list[list[dict[str, Any]]], after: list[list[dict[str, Any]]]) -> list[Number]:
    found: dict[tuple[str, str, str], Number] = {}
    for side, runs in (("before", before), ("after", after)):
        for records in runs:
            for record in records:
                if record["contender"] != CONTENDER or record["unit"] not in SPEED_UNITS:
                    continue
                if "median" not in record:
                    continue
                key = (record["measure"], record["case"], record["metric"])
                number = found.setdefault(key, Number(
                    f"{record['measure']}, {record['case']}: {record['metric']}",
                    record["unit"], [], []))
                getattr(number, side).append(record["median"])
    return list(found.values())


def cell(values: list[float]) -> str:
    if not values:
        return "—"
    middle = statistics.median(values)
    return f"{middle:.4g} ({min(values):.4g} to {max(values):.4g})" if len(values) > 1 \
        else f"{middle:.4g}"


def report(rev: str, sha: str, head: str, runs: int, quick: bool, rows: list[Number]) -> str:
    lines = [
        f"# ./dev bench before and after, {datetime.date.today()}", "",
        f"interp-rpc only: before = {rev} ({sha[:12]}), after = this tree "
        f"(HEAD {head[:12]}{', with changes' if tree_changed() else ''}); {runs} runs a side, "
        f"in turns{', --quick (not representative)' if quick else ''}; load average "
        f"{os.getloadavg()[0]:.2f} at the end. Cells: median (lowest to highest run); "
        "ratio: after over before.", "",
        "| number | unit | before | after | after / before | |",
        "|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        ratio = (f"{statistics.median(row.after) / statistics.median(row.before):.2f}"
                 if row.before and row.after and statistics.median(row.before) else "—")
        lines.append(f"| {row.label} | {row.unit} | {cell(row.before)} | {cell(row.after)} | "
                     f"{ratio} | {row.verdict()} |")
    return "\n".join(lines) + "\n"


def tree_changed() -> bool:
    status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "src"],
                            capture_output=True, text=True).stdout
    return bool(status.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", help="the commit to compare this tree with")
    parser.add_argument("--runs", type=int, default=3, help="runs a side (default: 3)")
    parser.add_argument("--quick", action="store_true", help="./dev bench --quick's sizes")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if "INTERP_RPC_BUILD_DIR" not in os.environ:
        parser.error("run it in ./dev's environment: ./dev run -- python3 bench/before_after.py")
    sha, head = commit_of(args.rev), commit_of("HEAD")
    package_before = built_package(sha)
    package_after = Path(os.environ["INTERP_RPC_BUILD_DIR"]) / "stage" / "site-packages"
    before: list[list[dict[str, Any]]] = []
    after: list[list[dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(args.runs):
            for side, package, kept in (("before", package_before, before),
                                        ("after", package_after, after)):
                print(f"run {index + 1} of {args.runs}, {side}", file=sys.stderr, flush=True)
                kept.append(bench_once(side, package, args.quick,
                                       Path(scratch) / f"{side}{index}.json"))
    text = report(args.rev, sha, head, args.runs, args.quick, numbers(before, after))
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
