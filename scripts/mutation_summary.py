"""Summarize the last `mutmut run` (the `mutants/` directory): counts, then every mutant not killed, by file.

A mutant counts as surviving when the tests passed with it (`survived`) or no selected test runs its
function (`no tests`). A timeout is a kill: the mutant changed what the code does enough to hang it.
Exits 1 when more than --max-survived-percent of the mutants checked survive (docs/mutation.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from mutmut.stats import status_by_exit_code

SURVIVING = ("survived", "no tests")
ORDER = ("killed", "timeout", "survived", "no tests", "suspicious", "segfault", "not checked")


def file_results(root: Path) -> dict[str, dict[str, str]]:
    """source path -> mutant name -> status, for every file mutmut mutated."""
    results: dict[str, dict[str, str]] = {}
    for meta in sorted(root.rglob("*.py.meta")):
        by_key = json.loads(meta.read_text())["exit_code_by_key"]
        if by_key:
            source = str(meta.relative_to(root)).removesuffix(".meta")
            results[source] = {name: status_by_exit_code[code] for name, code in by_key.items()}
    return results


def short(name: str) -> str:
    """`pioneer_grpc.history.budget.xǁBudgetǁof__mutmut_3` -> `Budget.of #3`."""
    tail = name.rsplit(".", 1)[-1]
    function, _, number = tail.rpartition("__mutmut_")
    return f"{function.removeprefix('x_').removeprefix('xǁ').replace('ǁ', '.')} #{number}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mutants", type=Path, default=Path("mutants"))
    parser.add_argument("--max-survived-percent", type=float, default=10.0)
    parser.add_argument("--list", action="store_true", help="name every surviving mutant")
    args = parser.parse_args()
    results = file_results(args.mutants)
    if not results:
        print(f"no mutmut results under {args.mutants}/: run `make mutate`")
        return 1
    total: Counter[str] = Counter()
    print(f"{'file':<50} {'mutants':>7} {'killed':>7} {'timeout':>7} {'survived':>8} {'no tests':>8}")
    for source, statuses in results.items():
        counts = Counter(statuses.values())
        total += counts
        print(
            f"{source:<50} {len(statuses):>7} {counts['killed']:>7} {counts['timeout']:>7} "
            f"{counts['survived']:>8} {counts['no tests']:>8}"
        )
    mutants = sum(total.values()) - total["not checked"]
    surviving = sum(total[s] for s in SURVIVING)
    percent = 100.0 * surviving / max(1, mutants)
    print("total: " + ", ".join(f"{total[s]} {s}" for s in ORDER if total[s] or s in ("killed", "survived")))
    limit = args.max_survived_percent
    unchecked = (
        f" ({total['not checked']} not checked: a run of some mutants, or cut short)"
        if total["not checked"]
        else ""
    )
    print(f"{surviving} of {mutants} mutants checked survive ({percent:.1f}%; at most {limit:g}%){unchecked}")
    if args.list:
        by_function: dict[str, list[str]] = defaultdict(list)
        for source, statuses in results.items():
            for name, status in statuses.items():
                if status in SURVIVING:
                    by_function[f"{source} ({status})"].append(short(name))
        for where, names in by_function.items():
            print(f"{where}: {' '.join(names)}")
    else:
        print("`.venv/bin/python scripts/mutation_summary.py --list` names them; `mutmut show NAME`")
    return 0 if percent <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
