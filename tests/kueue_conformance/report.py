"""`make conformance`: run every ported Kueue v0.19.2 test case on the admission engine and say
how many agree with Kueue.

Each `run_*.py` module of this folder ports one family of Kueue's table-driven tests (the
flavor assigner's, the preemptor's, the fair-sharing ones ...) as data fixtures and exposes
`results()`, one `CaseResult` per case. A case the engine does not model is listed with why
and does not count as agreeing. The last line is `kueue conformance: N/M cases agree`.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def families() -> list[str]:
    return sorted(p.stem for p in HERE.glob("run_*.py"))


def main() -> int:
    agree = total = 0
    for family in families():
        module = importlib.import_module(f"tests.kueue_conformance.{family}")
        results = list(module.results())
        ok = sum(1 for r in results if r.modelled and r.agrees)
        print(f"{family.removeprefix('run_')}: {ok}/{len(results)} agree")
        for r in results:
            if not r.modelled:
                print(f"  not modelled: {r.name}: {r.why}")
            elif not r.agrees:
                print(f"  disagrees: {r.name}: {r.why}")
        agree += ok
        total += len(results)
    print(f"kueue conformance: {agree}/{total} cases agree")
    return 0 if total and agree * 100 >= 95 * total else 1


if __name__ == "__main__":
    sys.exit(main())
