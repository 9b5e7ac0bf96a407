"""The validator of programs: whether a program is one the language can express, before any
engine runs it.

`validate(program)` raises ProgramError, one line naming the statement's path, its op and the
field, e.g. `statement 3.1 (inplace): params.fn: unknown inplace op 'exp__'`, for the first
thing wrong:

- structure: every field of the JSON type the format says (statements and bodies lists of
  statements, args a list of names, numbers and nulls, params and meta objects, clauses
  clause IDs, seed an int): the msgspec schema of conformance/lang/program.py;
- fields: each statement's kind checks its own (`Kind.check`, with conformance/kinds/fields.py):
  every fn, mode, dtype, observable, hook behaviour, node-hook kind and kw key from the
  vocabulary (the op table, the kinds' tables), names identifiers, numbers finite, a leaf's
  values as many as its shape holds, an index of ints and slices; params holds only the keys
  the kind reads (`Kind.param_keys`), and only a block kind has a body;
- hook labels: no two hooks share one (a hook's label, or its out name where it has none,
  is what its calls are logged and compared under);
- names: every name a statement reads is bound by an earlier statement (one in a grad-mode
  block counts after the block too: the executor keeps one namespace), a hook handle where the
  kind takes one (`Kind.takes_handle`: remove) and a tensor everywhere else.

`load(text)` reads a program file's text and validates it: what `gradspec replay` runs. The
executor still checks each statement's fields as it runs it (a Program built in Python is not
loaded), and the minimizer keeps only candidates that validate.
"""
from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import Any

import msgspec

from ..spec.reader import load_spec
from .program import KINDS, Program, ProgramError, ProgramSchema, Stmt, structure_message

CLAUSE_ID = re.compile(r"[A-Z]+-[0-9]+")
# Blocks nested deeper than this are refused: the generator nests at most 2 deep (3,000 seeds
# of sizes 20 and 40), and at some hundreds a program no longer crosses to a worker process
# (pickling it recursed past Python's limit, a traceback instead of a verdict).
MAX_DEPTH = 32

__all__ = ["CLAUSE_ID", "MAX_DEPTH", "ProgramError", "check_clauses", "is_valid", "load",
           "validate"]


def load(text: str | bytes) -> Program:
    """The program in JSON text (bytes: UTF-8), validated, every clause it cites one of the
    spec's (a program's clauses decide how a divergence is judged); ProgramError otherwise."""
    program = Program.loads(text)
    validate(program)
    check_clauses(program)
    return program


def check_clauses(program: Program) -> None:
    """ProgramError for the first clause a statement cites that the spec does not have: a
    program from elsewhere (a file, a program source) is judged by the clauses it cites."""
    known = load_spec().clauses
    for path, s in program.walk():
        unknown = [c for c in s.clauses if c not in known]
        if unknown:
            raise ProgramError(f"statement {path} ({s.op}): clauses: {unknown[0]} is not a "
                               f"clause of this spec")


def is_valid(program: Program) -> bool:
    """Whether `program` validates."""
    try:
        validate(program)
    except ProgramError:
        return False
    return True


def validate(program: Program) -> None:
    """Raise ProgramError for the first thing wrong with `program` (see the module's doc)."""
    try:
        msgspec.convert(program, ProgramSchema, from_attributes=True)
    except msgspec.ValidationError as exc:
        raise ProgramError(structure_message(exc)) from None
    if not KINDS:
        raise ProgramError("no statement kinds are loaded (import conformance.kinds)")
    _block(program.statements, "", {}, {})


def _block(stmts: list[Stmt], prefix: str, bound: dict[str, bool],
           labels: dict[str, str]) -> None:
    """Validate a run of statements; `bound` maps each name bound so far to whether it is a
    hook handle, `labels` each hook label to the path of the statement that gave it: both
    are updated."""
    for i, s in enumerate(stmts):
        path = f"{prefix}{i}"
        kind = KINDS.get(s.op) if isinstance(s.op, str) else None
        if kind is None:
            raise ProgramError(f"statement {path}: op: unknown op {s.op!r}")
        where = f"statement {path} ({s.op})"
        try:
            kind.check(s, path)
        except ProgramError as exc:
            text = str(exc)
            raise ProgramError(text.replace(f"statement {path}:", f"{where}:", 1)) from None
        _shape(s, kind, where)
        for n in kind.refs(s):
            if n not in bound:
                raise ProgramError(f"{where}: {_field_of(s, n)}: name {n!r} is not bound by "
                                   f"an earlier statement")
            handle = kind.takes_handle and n == s.target
            if bound[n] != handle:
                want, got = ("a hook handle", "a tensor") if handle else ("a tensor",
                                                                          "a hook handle")
                raise ProgramError(f"{where}: {_field_of(s, n)}: must name {want}, "
                                   f"{n!r} is {got}")
        for n in kind.binds(s):
            bound[n] = kind.binds_handle and n == s.out
        for label in kind.hook_labels(s):   # a hook's calls are told apart by their label
            if label in labels:
                raise ProgramError(f"{where}: params.label: {label!r} labels the hook of "
                                   f"statement {labels[label]} too (the label, or the out "
                                   f"name where there is none, names one hook's calls)")
            labels[label] = path
        if s.body and path.count(".") >= MAX_DEPTH:     # s is block MAX_DEPTH + 1
            raise ProgramError(f"{where}: body: blocks nested more than {MAX_DEPTH} deep")
        _block(s.body, f"{path}.", bound, labels)


def _shape(s: Stmt, kind: Any, where: str) -> None:
    """Fields the kind does not read: unknown params, a body on a kind without one, clauses
    that are no clause IDs."""
    unknown = [k for k in s.params if k not in kind.param_keys]
    if unknown:
        raise ProgramError(f"{where}: params: unknown field {unknown[0]!r} (the kind reads "
                           f"{', '.join(kind.param_keys) or 'none'})")
    if s.body and not kind.block:
        raise ProgramError(f"{where}: body: only a grad-mode block has a body")
    for i, c in enumerate(s.clauses):
        if not CLAUSE_ID.fullmatch(c):
            raise ProgramError(f"{where}: clauses[{i}]: not a clause ID: {c!r}")


def _field_of(s: Stmt, name: str) -> str:
    """The field of `s` that holds `name`, for messages."""
    if s.target == name:
        return "target"
    for i, a in enumerate(s.args):
        if a == name:
            return f"args[{i}]"
    for key, v in s.params.items():
        if isinstance(v, list) and name in v:
            return f"params.{key}[{v.index(name)}]"
    return "params"


MAX_INPUT_BYTES = 64 << 20  # a program or expected-failure file (generated ones: < 1 MiB)


def read_input(path: Path) -> bytes:
    """The bytes of an input file, refused (OSError, its strerror one line) when it is neither
    a regular file nor a pipe (`cat p.json | gradspec replay /dev/stdin`): a device such as
    /dev/zero never ends, or holds more than MAX_INPUT_BYTES (a file that large would take the
    memory of the machine before it could be validated). A named pipe (FIFO) is read as `cat`
    reads it: its open waits until a writer opens it (`gradspec replay fifo & ... > fifo`),
    then it is read to the end; opened without waiting, it would read as empty."""
    if os.path.realpath(path) == os.devnull:    # the empty file by convention
        return b""
    fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    # anything else is opened without blocking: a device's open may block, and is refused
    fd = os.open(path, os.O_RDONLY | (0 if fifo else os.O_NONBLOCK))
    with open(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise OSError(errno.EINVAL, "neither a regular file nor a pipe")
        os.set_blocking(fd, True)       # a pipe's writer may be slower than its reader
        data = f.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_INPUT_BYTES >> 20} MiB, the most "
                                   "gradspec reads")
    return data
