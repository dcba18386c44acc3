# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command line: ``python -m tests.standin list | scenario | wheelhouse | import-layout`` (from the repo root).

Test support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import List, Optional

from ._layout import STACKS, StandinError
from ._scenarios import INSTALLERS, SCENARIOS, build_scenario
from ._trim import trim_layout
from ._wheelhouse import build_wheelhouse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.standin", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the scenarios")
    scenario = sub.add_parser("scenario", help="build one scenario under DEST and print it as JSON")
    scenario.add_argument("name", choices=sorted(SCENARIOS))
    scenario.add_argument("dest", type=Path)
    scenario.add_argument("--cache", type=Path, help="wheelhouse cache directory (reused across runs)")
    scenario.add_argument("--installer", choices=INSTALLERS, default="pip",
                          help="pip (python -m venv, pip install) or uv (uv venv: no pip in the venv; uv pip install)")
    wheelhouse = sub.add_parser("wheelhouse", help="build the stand-in wheels of a stack into DEST")
    wheelhouse.add_argument("stack", choices=STACKS)
    wheelhouse.add_argument("dest", type=Path)
    wheelhouse.add_argument("--cache", type=Path)
    layout = sub.add_parser("import-layout", help="trim a measured layout JSON into tests/standin/data form")
    layout.add_argument("src", type=Path)
    layout.add_argument("dest", type=Path)
    layout.add_argument("--torch-version", help="torch.__version__, e.g. 2.9.1+cu128 (default: from SRC's name)")
    layout.add_argument("--cuda", help="torch.version.cuda, e.g. 12.8 (default: from SRC's name)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for name, scenario in SCENARIOS.items():
                after = "after " + scenario.parent if scenario.parent else ""
                print("%-16s %-6s %-19s %s" % (name, scenario.stack, after, scenario.description))
        elif args.command == "scenario":
            start = time.monotonic()
            info = build_scenario(args.name, args.dest, args.cache, installer=args.installer)
            print(json.dumps(dict(info.as_dict(), seconds=round(time.monotonic() - start, 2)), indent=1))
        elif args.command == "wheelhouse":
            start = time.monotonic()
            dest = build_wheelhouse(args.stack, args.dest, args.cache)
            print("%d wheels in %s (%.2f s)" % (len(list(dest.glob("*.whl"))), dest, time.monotonic() - start))
        else:
            _import_layout(args)
    except StandinError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 1
    return 0


def _import_layout(args: argparse.Namespace) -> None:
    match = re.match(r"torch-(\d[^-]*)-cu(\d+)(\d)\.json$", args.src.name)
    if not (args.torch_version and args.cuda) and not match:
        raise StandinError("%s: name it torch-VERSION-cuNNN.json or pass --torch-version and --cuda" % args.src)
    torch_version = args.torch_version or "%s+cu%s%s" % match.groups()
    cuda = args.cuda or "%s.%s" % match.groups()[1:]
    raw = json.loads(args.src.read_text(encoding="utf-8"))
    args.dest.write_text(json.dumps(trim_layout(raw, torch_version, cuda), indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
