"""Differential tests: which error a write wrong in two ways at once raises (INPLACE-1,
INPLACE-18, INFER-4; spec/errors.md, "two errors at once").

torch 2.13 checks an in-place write in one order: the refusals of leaves and views first, then
the memory it writes (SELF_OVERLAPPING_WRITE, PARTIAL_OVERLAP), then the operands' shapes and
the result's dtype (its own errors, of no kind, logged with their message), and an inference
tensor last, as it bumps the version. Grad mode and inference mode are global to the thread, so
every program restores them in `finally`.
"""
import pytest

SHAPES = [(), (2,), (2, 3)]
OPS = ["add_", "mul_", "sub_", "div_", "copy_", "iadd"]


def _write(t, op, operand):
    if op == "iadd":
        t += operand
    elif op == "setitem":
        t[...] = operand
    else:
        getattr(t, op)(operand)


def _misfits(torch, shape):
    """Operands that do not fit a target of `shape`: one that does not broadcast to it (for a
    0-d target, one that broadcasts larger) and one that broadcasts larger."""
    wrong = (3,) if len(shape) < 2 else (2, 2)
    return {"does not broadcast": torch.ones(wrong), "broadcasts larger": torch.ones((4,) + shape)}


def _inference(torch, make):
    with torch.inference_mode():
        return make()


@pytest.mark.clause("INFER-4")
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_an_inference_tensor_is_refused_after_its_operands(differential, shape, op):
    """An operand that does not fit raises torch's own error, not INFERENCE_INPLACE, in both
    grad modes; an int inference tensor given a float result raises the cast error."""
    def prog(torch, log):
        a = _inference(torch, lambda: torch.ones(shape))
        n = _inference(torch, lambda: torch.ones(shape, dtype=torch.int64))
        try:
            for grad in (True, False):
                torch.set_grad_enabled(grad)
                for label, operand in _misfits(torch, shape).items():
                    log.attempt(f"{label}, grad {grad}", lambda o=operand: _write(a, op, o))
                    log.attempt(f"int target, {label}", lambda o=operand: _write(n, op, o))
                log.attempt(f"fitting, grad {grad}", lambda: _write(a, op, torch.ones(shape)))
                if op != "copy_":   # copy_ casts; the others give a float result
                    log.attempt(f"float into int, grad {grad}",
                                lambda: _write(n, op, torch.full(shape, 0.5)))
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


def _expanded_writes(torch, e, shape):
    return {"add_": lambda: e.add_(torch.ones(shape)), "exp_": lambda: e.exp_(),
            "mul_ number": lambda: e.mul_(2.0), "copy_": lambda: e.copy_(torch.ones(shape)),
            "setitem number": lambda: _write(e, "setitem", 2.0),
            "fill_ tensor": lambda: e.fill_(torch.tensor(2.0)),
            "add_ of a misfit": lambda: e.add_(torch.ones(3)),
            "zero_": lambda: e.zero_(), "fill_ number": lambda: e.fill_(2.0)}


@pytest.mark.clause("INFER-4", "INPLACE-17", "INPLACE-18")
@pytest.mark.parametrize("shape", [(2,), (2, 3)])
@pytest.mark.parametrize("grad", [True, False])
def test_an_inference_tensor_is_refused_after_its_memory(differential, shape, grad):
    """An expanded view of an inference tensor raises SELF_OVERLAPPING_WRITE for the writes
    that copy, and INFERENCE_INPLACE for zero_ and fill_ of a number, which may write it; an
    operand partly overlapping it raises PARTIAL_OVERLAP."""
    def prog(torch, log):
        base = _inference(torch, lambda: torch.arange(6.0))
        for where in ("inside", "outside"):
            if where == "inside":
                e = _inference(torch, lambda: torch.ones(shape[:-1] + (1,)).expand(shape))
            else:
                e = _inference(torch, lambda: torch.ones(shape[:-1] + (1,))).expand(shape)
            writes = _expanded_writes(torch, e, shape)
            try:
                torch.set_grad_enabled(grad)
                for label, write in writes.items():
                    log.attempt(f"expanded {where} inference mode, {label}", write)
                for op in ("add_", "mul_", "copy_"):
                    log.attempt(f"partly overlapping {op}",
                                lambda op=op: getattr(base[:4], op)(base[1:5]))
            finally:
                torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("INPLACE-18")
@pytest.mark.parametrize("shape", [(2,), (2, 3)])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("grad", [True, False])
def test_an_expanded_target_is_refused_before_its_operands(differential, shape, op, grad):
    """SELF_OVERLAPPING_WRITE, whatever the operand's shape or the result's dtype; a setitem
    checks that its value broadcasts first, and fill_ that its value is 0-d."""
    def prog(torch, log):
        expanded = {"float": torch.ones(shape[:-1] + (1,)).expand(shape),
                    "int": torch.ones(shape[:-1] + (1,), dtype=torch.int64).expand(shape),
                    "of a non-leaf": (torch.ones(shape[:-1] + (1,), requires_grad=True) * 1
                                      ).expand(shape)}
        try:
            torch.set_grad_enabled(grad)
            for name, e in expanded.items():
                for label, operand in _misfits(torch, shape).items():
                    log.attempt(f"{name}, {label}", lambda e=e, o=operand: _write(e, op, o))
                    log.attempt(f"{name}, setitem {label}", lambda e=e, o=operand: _write(
                        e, "setitem", o))
                log.attempt(f"{name}, fill_ with dimensions", lambda e=e: e.fill_(
                    torch.ones(2)))
            if op != "copy_":
                log.attempt("float into int", lambda: _write(
                    expanded["int"], op, torch.full(shape, 0.5)))
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("INPLACE-1", "INPLACE-2", "MODE-9")
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", OPS + ["setitem"])
def test_leaves_and_views_are_refused_before_their_operands(differential, shape, op):
    """With grad mode on, LEAF_INPLACE and the refusals of views come before torch's own
    errors for operands that do not fit (a setitem's value is checked first); under no_grad
    the operand's error is raised."""
    def prog(torch, log):
        def targets():
            leaf = torch.ones(shape, requires_grad=True)
            with torch.no_grad():
                made_under_no_grad = leaf.view(shape)
            return {"leaf": leaf, "view of a leaf": leaf.view(shape),
                    "view made under no_grad": made_under_no_grad}
        try:
            for grad in (True, False):
                for name, t in targets().items():
                    torch.set_grad_enabled(grad)
                    for label, operand in _misfits(torch, shape).items():
                        log.attempt(f"{name}, {label}, grad {grad}",
                                    lambda t=t, o=operand: _write(t, op, o))
                    torch.set_grad_enabled(True)
        finally:
            torch.set_grad_enabled(True)
    differential(prog)
