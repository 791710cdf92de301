"""`python -m workflows.probes <probe> --out result.json`: see workflows/probes/cli.py.

`python -m workflows.probes sample --dest DIR` is no probe: it writes the suite image's dataset
sample (workflows/probes/sample.py) and no result. `python -m workflows.probes preflight` checks
the image it runs in (workflows/probes/preflight.py): it is dispatched before anything else of
the package is imported, so it can say what an image lacks even where the rest would not import.
"""

import os
import sys

if __name__ == "__main__":  # spawned ranks import this module again under another name
    if sys.argv[1:2] == ["preflight"]:
        from .preflight import main as preflight

        sys.exit(preflight(sys.argv[2:]))
    if sys.argv[1:2] == ["sample"]:
        from .sample import main as sample

        sys.exit(sample(sys.argv[2:]))
    from .cli import main

    code = main()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        # a rank of a launched world (torchrun): see envelope.end_process for why it exits
        # without interpreter teardown
        from .envelope import end_process

        end_process(code)
    sys.exit(code)
