"""Every benchmark in turn, each with its own defaults (the names in BENCHMARKS below).

Each writes its JSON to release/benchmarks/ and prints its own summary; a benchmark that fails is
reported and the others still run (the exit status is 1 if any failed).

    uv run python -m benchmarks [--only NAME ...]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback

BENCHMARKS = ("task_chain", "merge", "demo", "server", "api", "queue", "catalog", "ui", "purge")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        action="append",
        choices=BENCHMARKS,
        metavar="NAME",
        help=f"run only this benchmark (repeatable; one of {', '.join(BENCHMARKS)})",
    )
    args = parser.parse_args(argv)
    chosen = [name for name in BENCHMARKS if not args.only or name in args.only]
    failed = []
    for name in chosen:
        print(f"=== benchmarks.{name}", flush=True)
        started = time.perf_counter()
        try:
            # Every module's main takes argv; an empty list keeps it from reading this command's own.
            # merge returns an exit status, the others their report.
            result = importlib.import_module(f"benchmarks.{name}").main([])
            ok = not (isinstance(result, int) and result != 0)
        except SystemExit as stop:
            ok = stop.code in (None, 0)
            if not ok:
                print(stop.code, file=sys.stderr)
        except Exception:
            traceback.print_exc()
            ok = False
        if not ok:
            failed.append(name)
        print(f"=== benchmarks.{name}: {time.perf_counter() - started:.0f} s", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
