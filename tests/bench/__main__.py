# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python -m tests.bench``: measure, then print Markdown (``make bench`` tees it to build/bench.md).

Benchmark support for gpuops.cuda_venv: not part of the collection's API. Progress goes to stderr.
Environment: CUDA_VENV_BENCH_RUNS and CUDA_VENV_BENCH_HEAVY_RUNS (defaults of --runs and --heavy-runs),
CUDA_VENV_BENCH_CACHE (generated and real venvs, default build/bench-cache), CUDA_VENV_BENCH_REAL=1 (build the real
torch venv when it is not cached, about 5.6 GB), CUDA_VENV_BENCH_PYTHON (its interpreter, default python3.11),
CUDA_VENV_STANDIN_CACHE (stand-in wheels).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

from tests.standin import build_scenario

from . import _commands as cmd
from . import _facts_suite, _find, _fleet, _kernels, _real_repair, _realvenv, _repair_suite, _scaling, _synthetic
from ._machine import header
from ._measure import BenchError

REPO = Path(__file__).resolve().parents[2]
PARTS = ("standin", "repair", "synthetic", "find", "real", "real-repair", "fleet", "kernels")


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("CUDA_VENV_BENCH_RUNS", "5")),
                        help="measured runs per figure on the stand-in venv and for the repair (default 5)")
    parser.add_argument("--heavy-runs", type=int, default=int(os.environ.get("CUDA_VENV_BENCH_HEAVY_RUNS", "3")),
                        help="measured runs per figure on the generated and the real venvs (default 3)")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: %s" % ",".join(PARTS))
    parser.add_argument("--sizes", type=int, default=len(_synthetic.SIZES),
                        help="how many generated venvs, smallest first (default all %d)" % len(_synthetic.SIZES))
    parser.add_argument("--build-real", action="store_true", help="build the real torch venv if it is not cached "
                        "(same as CUDA_VENV_BENCH_REAL=1)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (stand-in venvs, file lists)")
    return parser


def _uv() -> Optional[str]:
    found = shutil.which("uv")
    beside = Path(sys.executable).parent / "uv"
    return found or (str(beside) if beside.is_file() else None)


def _loadavg() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


class _Bench:
    def __init__(self, args, work: Path):
        self.args, self.work = args, work
        self.parts = [p.strip() for p in args.only.split(",") if p.strip()]
        self.misses: List[str] = []
        self.durations: List[str] = []
        self.cache = _realvenv.cache_root(REPO)

    def emit(self, *tables) -> None:
        for table in tables:
            self.misses += table.misses()
            print(table.markdown(), flush=True)

    def facts(self, title: str, venv: Path, anchor: str, runs: int, **extra):
        bench = _facts_suite.FactsBench(title, venv, anchor, runs, str(REPO), self.work, **extra)
        table, files = _facts_suite.run(bench, _log)
        self.emit(table)
        return table, files

    def standin(self):
        cache = os.environ.get("CUDA_VENV_STANDIN_CACHE", str(REPO / "build" / "standin-cache"))
        _log("bench: building the stand-in contaminated venv")
        info = build_scenario("contaminated", self.work / "standin", cache=cache)
        if "standin" in self.parts:
            ansible = ("ansible", "cuda_venv_facts through `ansible localhost -m` (same work + Ansible)",
                       [cmd.ansible_facts(info.venv, str(REPO), self.work / "ansible")], "check", None)
            self.facts("Facts on the stand-in `contaminated` venv (torch 2.9.1 + cu12 wheels + 4 cu13 wheels)",
                       info.venv, "torch", self.args.runs, extra_rows=(ansible,), probe_floor="import torch")
        if "repair" in self.parts:
            links = (info.wheelhouse, info.extra_wheelhouse)
            bench = _repair_suite.RepairBench(info.venv, links, _uv(), self.args.runs, str(REPO), self.work)
            self.emit(*_repair_suite.run(bench, _log))

    def synthetic(self):
        rows = []
        for size in _synthetic.SIZES[:self.args.sizes]:
            venv = _synthetic.venv_for(size, self.cache, _log)
            table, files = self.facts("Facts on a generated venv: %s" % size.label, venv, _synthetic.ROOT_NAME,
                                      self.args.heavy_runs)
            rows.append((size.label, files.count, table))
        print(_scaling.markdown(rows), flush=True)

    def real(self):
        venv = _realvenv.cached(REPO)
        if venv is None and (self.args.build_real or _realvenv.wanted()):
            venv = _realvenv.build(REPO, _log)
        if venv is None:
            print("### Real torch venv\n\nNot measured: no cached real venv in %s. Build it once with "
                  "`CUDA_VENV_BENCH_REAL=1 make bench` (pip install %s, about 5.6 GB).\n"
                  % (_realvenv.venv_dir(REPO), _realvenv.REQUIREMENT), flush=True)
            return
        noop = ("noop", "no-op cuda_venv_repair (pip backend, `repair.repair` in a child)",
                [cmd.repair(venv, "pip", "", (), str(REPO), str(self.work / "uv-cache"))], None,
                _repair_suite.REAL_NOOP_GOAL)
        self.facts("Real torch venv (%s, pip install %s)" % (venv.parent.name, _realvenv.REQUIREMENT), venv, "torch",
                   self.args.heavy_runs, extra_rows=(noop,), probe_floor="import torch")
        self.emit(_fleet.real_role(REPO, venv, self.work, self.args.heavy_runs, _log))

    def real_repair(self):
        benches = _real_repair.prepare(REPO, self.work, _uv(), self.args.heavy_runs, _log)
        if not benches:
            print("### %s\n\nNot measured: no torch 2.9.1 wheel in make acceptance's wheelhouse. Run `make acceptance` "
                  "once (about 7.6 GB of real wheels), then this part.\n" % _real_repair.TITLE, flush=True)
            return
        for bench in benches:
            self.emit(*_repair_suite.run(bench, _log))
            _repair_suite.remove_copies(bench)

    def run(self):
        if "standin" in self.parts or "repair" in self.parts:
            self.timed("stand-in and repair", self.standin)
        if "synthetic" in self.parts:
            self.timed("generated venvs", self.synthetic)
        if "find" in self.parts:
            self.timed("finding venvs", lambda: self.emit(_find.run(REPO, self.cache, self.args.runs, _log)))
        if "real" in self.parts:
            self.timed("real venv", self.real)
        if "real-repair" in self.parts:
            self.timed("real repair", self.real_repair)
        if "fleet" in self.parts:
            self.timed("fleet", lambda: self.emit(_fleet.fleet(REPO, self.work, _log)))
        if "kernels" in self.parts:
            self.timed("kernels", lambda: self.emit(_kernels.run(self.work, self.args.runs, _log, _realvenv.cached(REPO))))

    def timed(self, name: str, part) -> None:
        started = time.monotonic()
        part()
        self.durations.append("%s %.0f s" % (name, time.monotonic() - started))


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    started = time.monotonic()
    print(header(_uv(), args.runs, args.heavy_runs))
    print("- load average at start: %s\n" % _loadavg(), flush=True)
    (REPO / "build").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-work-", dir=str(REPO / "build")))
    bench = _Bench(args, work)
    try:
        bench.run()
    except (BenchError, _realvenv.RealVenvError) as exc:
        print("\n**bench failed**: %s" % exc, flush=True)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("### Goals not met\n")
    print("\n".join("- " + miss for miss in bench.misses) if bench.misses else "None.")
    print("\nBench time %.0f s (%s); load average at the end: %s" % (
        time.monotonic() - started, ", ".join(bench.durations), _loadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
