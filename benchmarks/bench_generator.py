"""Generation speed: programs/s of the current generator against the frozen first version.

The frozen version is the generator as it stood before it was split into conformance/model,
conformance/kinds and conformance/gen: its three modules (generate.py, strategies.py and
program.py) are read from the git history at V1_COMMIT into a temporary package, so both run
in one process on the same machine, alternately, best of `--repeat`. Before timing, the script
checks that both draw the same programs (their JSON, byte for byte: the current generator at
vocabulary 1, the frozen one's), and also times the newest vocabulary's, which draws other
programs. It prints the ratio and asserts nothing about time.

    python benchmarks/bench_generator.py [--count 2000] [--size 20] [--repeat 5]
"""
from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

V1_COMMIT = "2131cd82ec0321bcdbb926af07c6cc2ba13f72e4"
V1_MODULES = ("generate", "strategies", "program")
V1_PACKAGE = "_gradspec_generator_v1"
# The frozen generator reads clause metadata through `.specdoc`; the spec reader is shared. It
# knows no finer capability (conformance/spec/capabilities.py, FINER): a clause that requires
# one (GRAPH-4 and GRAPH-6 require graph_structure since 2.0.0, where they required grad_fn)
# requires, for it, the coarse capability that implies it, as the current generator reads it.
_SPECDOC_SHIM = '''
import types

try:
    from conformance.spec.capabilities import FINER
    from conformance.spec.reader import load_spec as _load
except ImportError:
    from conformance.specdoc import load_spec as _load
    FINER = {}


def load_spec():
    return types.SimpleNamespace(clauses={
        cid: types.SimpleNamespace(requires=tuple(FINER.get(r, r) for r in c.requires))
        for cid, c in _load().clauses.items()})
'''


def load_v1(where: str):
    """The frozen generator module, written out of git history into `where`."""
    pkg = os.path.join(where, V1_PACKAGE)
    os.makedirs(pkg, exist_ok=True)
    for name in V1_MODULES:
        text = subprocess.run(["git", "-C", ROOT, "show", f"{V1_COMMIT}:conformance/{name}.py"],
                              check=True, capture_output=True, text=True).stdout
        with open(os.path.join(pkg, f"{name}.py"), "w") as f:
            f.write(text)
    for name, text in (("__init__", ""), ("specdoc", _SPECDOC_SHIM)):
        with open(os.path.join(pkg, f"{name}.py"), "w") as f:
            f.write(text)
    sys.path.insert(0, where)
    return importlib.import_module(f"{V1_PACKAGE}.generate")


def rate(program_for_seed, seeds: range, size: int) -> float:
    t0 = time.perf_counter()
    for s in seeds:
        program_for_seed(s, None, size)
    return len(seeds) / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--size", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--check", type=int, default=200, help="seeds compared byte for byte")
    args = ap.parse_args(argv)
    import functools

    from conformance.generate import GENERATOR_VERSION
    from conformance.generate import program_for_seed as newest
    # the frozen version drew vocabulary 1: the same programs, so the same work
    program_for_seed = functools.partial(newest, vocabulary=1)
    with tempfile.TemporaryDirectory() as tmp:
        v1 = load_v1(tmp)
        for s in range(args.check):
            if v1.program_for_seed(s, None, args.size).dumps() != \
                    program_for_seed(s, None, args.size).dumps():
                print(f"seed {s}: the generators draw different programs")
                return 1
        seeds = range(args.count)
        best = {"v1": 0.0, "now": 0.0, "newest": 0.0}
        for _ in range(args.repeat):
            best["v1"] = max(best["v1"], rate(v1.program_for_seed, seeds, args.size))
            best["now"] = max(best["now"], rate(program_for_seed, seeds, args.size))
            best["newest"] = max(best["newest"], rate(newest, seeds, args.size))
    print(f"{args.count} programs of size {args.size}, best of {args.repeat}; "
          f"first {args.check} seeds identical")
    print(f"frozen v1 ({V1_COMMIT[:7]}): {best['v1']:8.0f} programs/s")
    print(f"current:            {best['now']:8.0f} programs/s")
    print(f"ratio current / v1: {best['now'] / best['v1']:.2f}x (target >= 2.0x)")
    print(f"(vocabulary {GENERATOR_VERSION}, gradspec run's, draws other programs: "
          f"{best['newest']:.0f} programs/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
