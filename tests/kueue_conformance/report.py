"""`make conformance`: run every ported Kueue v0.19.2 test case on the admission engine and say
how many agree with Kueue.

Each `run_*.py` module of this folder ports one family of Kueue's table-driven tests (the
flavor assigner's, the preemptor's, the fair-sharing ones ...) as data fixtures and exposes
`results()`, one `CaseResult` per case. A case the engine does not model is listed with why
and does not count as agreeing; the line `kueue conformance: N/M cases agree` counts them. Then
the same cases through the simulator's scheduling cycle (`run_simulated.py`), on their own.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


SIMULATED = "run_simulated"
"""The same cases through the simulator's cycle: reported on their own, not in the engine's
count (tests/kueue_conformance/run_simulated.py)."""


def families() -> list[str]:
    return sorted(p.stem for p in HERE.glob("run_*.py") if p.stem != SIMULATED)


def simulated() -> bool:
    """The simulated run: every case it expresses agrees, or is a known disagreement."""
    module = importlib.import_module(f"tests.kueue_conformance.{SIMULATED}")
    results = list(module.results())
    run = [r for r in results if r.modelled]
    ok = sum(1 for r in run if r.agrees)
    known = module.KNOWN_DISAGREEMENTS
    print(
        f"simulated (the simulator's cycle): {ok}/{len(run)} run cases agree, "
        f"{len(run) - ok} known disagreements, {len(results) - len(run)} of {len(results)} "
        "not expressible"
    )
    for r in results:
        if not r.modelled:
            print(f"  not expressible: {r.name}: {r.why}")
        elif not r.agrees:
            label = "known disagreement" if r.name in known else "disagrees"
            print(f"  {label}: {r.name}: {known.get(r.name, r.why)}")
    return all(r.agrees or r.name in known for r in run) and not any(
        r.agrees for r in run if r.name in known
    )


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
    consistent = simulated()
    return 0 if total and agree * 100 >= 95 * total and consistent else 1


if __name__ == "__main__":
    sys.exit(main())
