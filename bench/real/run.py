#!/usr/bin/env python3
"""Real PyTorch FSDP2 / FSDP1 and DeepSpeed ZeRO-3 / ZeRO-2 on the suite's layouts, gradients, schedules
and oracle.
`python3 bench/real/run.py --help`; plain (world 1) or under torchrun. --help and the flag checks
need no torch; see bench/real/README.md."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shardaccum_real import cli, launch  # noqa: E402  (torch-free)


def main(argv=None) -> int:
    opts = cli.parse_or_exit(sys.argv[1:] if argv is None else argv)
    try:
        ln = launch.detect(dict(os.environ))
        refusal = launch.nvls_refusal(dict(os.environ), ln.world)
        if refusal:
            raise launch.LaunchError(refusal)
        launch.rendezvous_env(dict(os.environ), ln)
    except launch.LaunchError as e:
        print(f"bench/real/run.py: {e}", file=sys.stderr)
        return cli.EXIT_USAGE
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"bench/real/run.py: needs torch (2.11; a CUDA build for --device cuda): {e}", file=sys.stderr)
        return cli.EXIT_CASE_ERROR
    from shardaccum_real import gradsource, genlib, runner
    try:
        return runner.run(opts, ln, gradsource.SuiteGen)
    except (genlib.GenLibError, RuntimeError) as e:  # set-up failures; a case's own failure is recorded
        print(f"bench/real/run.py: {e}", file=sys.stderr)
        return cli.EXIT_CASE_ERROR
    except KeyboardInterrupt:  # the JSON is rewritten whole after every case (output.write_atomic)
        done = "holds the cases finished before it (its context 'partial' says how many)" \
            if os.path.exists(opts.out) else "was not written (no case had finished)"
        print(f"bench/real/run.py: interrupted; {opts.out} {done}", file=sys.stderr)
        return cli.EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
