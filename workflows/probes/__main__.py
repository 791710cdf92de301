"""`python -m workflows.probes <probe> --out result.json`: see workflows/probes/cli.py.

`python -m workflows.probes sample --dest DIR` is no probe: it writes the suite image's dataset
sample (workflows/probes/sample.py) and no result.
"""

import os
import sys

from .cli import main

if __name__ == "__main__":  # spawned ranks import this module again under another name
    if sys.argv[1:2] == ["sample"]:
        from .sample import main as sample

        sys.exit(sample(sys.argv[2:]))
    code = main()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        # a rank of a launched world (torchrun): see envelope.end_process for why it exits
        # without interpreter teardown
        from .envelope import end_process

        end_process(code)
    sys.exit(code)
