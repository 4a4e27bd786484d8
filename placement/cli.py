"""The `placement` command: a thin shell over the library's pure functions.

Each subcommand is a module in ``placement/commands`` with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; adding one is one line in
``COMMANDS``. Exit codes (DESIGN.md, "The command"): 0 success, 2 bad input (one
line on stderr naming the file, row or field; an input too big for the machine's memory too), 1 internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import logging
import os
import sys
import traceback

from traces.atomic import no_room
from traces.errors import InputError, one_line

from . import __version__

# Subcommand modules, in the order `placement --help` lists them.
COMMANDS = (
    "info",
    "gpus",
    "calibrate",
    "bench",
    "model",
    "import_",
    "trace",
    "convert",
    "evaluate",
    "rank",
    "train",
    "batch",
)


class OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line, as the command's other input errors (DESIGN.md, "The
    command"): argparse's message and where the usage is, instead of the usage block first. Exit 2. Each parser
    leaves its ``prog`` in the namespace (``_prog``; the deepest subcommand's wins), so the command's other errors
    begin as its usage errors do (``placement model lemeire: error: ...``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.set_defaults(_prog=self.prog)

    def error(self, message: str, prog: str | None = None):
        prog = prog or self.prog
        self.exit(2, f"{prog}: error: {one_line(message)} (`{prog} --help` for usage)\n")

    def parse_args(self, args=None, namespace=None):
        """argparse's, but an unrecognized argument is named by the subcommand that was given it (argparse's own
        names the top-level parser, and sends the user to ``placement --help``)."""
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}", getattr(namespace, "_prog", None))
        return namespace


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="placement",
        description="Predict and rank a GPU kernel's time for every placement of its arrays "
        "over global, texture, constant and shared memory, from one memory trace.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log progress (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        mod = importlib.import_module(f"placement.commands.{name}")
        p = sub.add_parser(
            mod.NAME, help=mod.HELP, description=mod.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        mod.add_arguments(p)
        # -v after the command too (`placement rank T --gpu k80 -v`); SUPPRESS keeps one given before it
        p.add_argument(
            "-v", "--verbose", action="count", default=argparse.SUPPRESS, help="log progress (-vv for debug)"
        )
        p.set_defaults(_run=mod.run)
    return parser


# Modules of numba kernels that every run of a command calls into and that take tens of
# seconds to compile, by (command, subcommand). When every cached kernel of one of them is
# missing from numba's cache (a fresh install without the wheel's cache, another CPU, edited
# sources), the run will compile it and the console says so when numba starts to
# (traces.numba_cache). A module that only some runs use is left out (it would read as cold
# to the others forever); so are the commands whose kernels compile in a few seconds (import
# nvbit and porple, info, bench gen: 0.5 to 8 s of CPU on 2 cores).
_EVALUATOR = ("cachesim._hierarchy_kernels",)  # the memory walk, 20 s of the 40
FIRST_USE_KERNELS: dict[tuple[str, str | None], tuple[str, ...]] = {
    ("import", "accelsim"): ("traces.importers._accelsim_kernels",),  # 24 s of CPU
    ("rank", None): _EVALUATOR,
    ("evaluate", None): _EVALUATOR,
}
FIRST_USE_NOTICE = "placement: compiling the numba kernels for first use (once, ~30 s; numba caches them)..."


def first_use_cold(args: argparse.Namespace) -> list[str]:
    """The modules of :data:`FIRST_USE_KERNELS` that ``args``' command calls into and whose
    kernels are not in numba's cache (``traces.numba_cache.cold_modules``); empty when they are
    (or the command compiles none)."""
    sub = getattr(args, "format", None) or getattr(args, "bench_command", None)
    modules = FIRST_USE_KERNELS.get((args.command, sub)) or FIRST_USE_KERNELS.get((args.command, None))
    if not modules:
        return []
    from traces.numba_cache import cold_modules

    return cold_modules(modules)


def main(argv: list[str] | None = None, *, notice: bool = False) -> int:
    """Run one command; its exit code. ``notice``: say on stderr when its numba kernels are
    about to be compiled (the console script; callers that go on, the tests, leave it off)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return int(exc.code or 0)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    cold = first_use_cold(args) if notice else []
    with _say_on_first_compile(cold):
        return _run(args)


def _say_on_first_compile(cold: list[str]) -> contextlib.AbstractContextManager:
    """Where ``cold`` names modules (the run will compile them), print :data:`FIRST_USE_NOTICE`
    when numba starts compiling the first of the project's kernels, theirs or one the run calls
    before them: when the run gets there, not before its input is checked (a typo's error then
    comes alone)."""
    if not cold:
        return contextlib.nullcontext()
    from traces.numba_cache import PACKAGES, on_first_compile

    return on_first_compile(PACKAGES, lambda: print(FIRST_USE_NOTICE, file=sys.stderr, flush=True))


def _run(args: argparse.Namespace) -> int:
    """The command's exit code, its input errors one line on stderr (exit 2), a bug's traceback (exit 1)."""
    try:
        return int(args._run(args))
    except InputError as exc:
        # One line whatever the message holds (a parser's message may carry newlines).
        print(f"{args._prog}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # an input too big for this machine (a generated trace's size): said, not a bug
        gc.collect()
        what = one_line(exc) or "no detail"
        advice = ("give a smaller --size" if args.command == "bench" else
                  "give a smaller size, or a trace file to stream (--stream yes)")  # fmt: skip
        msg = (f"{args._prog}: error: out of memory ({what}): the input needs more memory than this "
               f"machine has; {advice}")  # fmt: skip
        print(msg, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("placement: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if no_room(exc):  # a full disk, a quota, a read-only file system: the user's to fix, one line
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"{args._prog}: error: {where}cannot write ({os.strerror(exc.errno)})", file=sys.stderr)
            return 2
        # a bug: say so, with the traceback for the report
        traceback.print_exc()
        print("placement: internal error (a bug; please report it with the traceback above)", file=sys.stderr)
        return 1


GC_YOUNG_THRESHOLD = 2000
"""The console process's threshold of young-generation collections (CPython's default 700).

Start-up allocates some 120,000 long-lived objects (numba's typing and target, the
modules); with the default, ranking vecadd ran ~260 young and 2 full collections over
them, 0.12 s of CPU; with 2,000, ~90 young and no full one, 0.06 s. Cyclic garbage
waits for at most 2,000 more allocations; a long run collects as before."""


BLAS_THREADS = "1"
"""OpenBLAS threads of the console's process (``OPENBLAS_NUM_THREADS``, unless the user set it).

numpy and scipy (which numba's start-up imports) each load an OpenBLAS that starts a
thread per core, and those threads spin while the process starts: about 0.2 s of CPU of
a small rank's 1.1 s on 2 cores (median of 7, alternated: 1.14 s against 0.94 s with one
thread). The commands do no linear algebra worth a thread (two small least-squares fits)."""


def console() -> None:
    """The console script (and ``python -m placement.cli``): `main`, then exit with its code.

    OpenBLAS gets one thread (``BLAS_THREADS``) before anything imports numpy. A command
    whose numba kernels are not in numba's cache yet says so in one line on stderr when it
    starts compiling them (:func:`first_use_cold`): tens of seconds, its first run only.

    The collector runs less often (``GC_YOUNG_THRESHOLD``), and before exiting every
    object is frozen (``gc.freeze``): the interpreter's shutdown runs full collections
    while it clears the modules, and those would walk again the ~120,000 objects numba's
    typing and target set up (0.25-0.3 s of CPU after a small rank, more than its
    search). The objects are freed as before; only cyclic garbage left at exit is not
    collected, which the end of the process reclaims. ``main`` itself touches neither:
    a caller that goes on (the tests) keeps its collector as it was.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", BLAS_THREADS)
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    code = main(notice=True)
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
