"""Differential tests for leaves and `.grad`: LEAF-1 to LEAF-15 (spec/leaf.md).

Each program probes its clause from another angle than the spec example and logs flags,
gradients and error kinds so that torch and refimpl compare.
"""
import pytest


def flags(t):
    return [t.is_leaf, t.requires_grad, t.grad_fn is None]


@pytest.mark.clause("LEAF-1")
def test_factories_make_leaves(differential):
    def prog(torch, log):
        torch.manual_seed(0)
        made = {
            "randn": torch.randn(2, 3, requires_grad=True),
            "arange": torch.arange(0.0, 3.0, requires_grad=True),
            "ones_like": torch.ones_like(torch.zeros(2), requires_grad=True),
            "zeros f64": torch.zeros(2, dtype=torch.float64, requires_grad=True),
            "tensor": torch.tensor([[1.0]], requires_grad=True),
            "plain": torch.ones(3),
        }
        for label, t in made.items():
            log(label, flags(t))
        r = made["zeros f64"] * made["ones_like"]
        log("op result", flags(r))
        log("view result", flags(made["randn"][0]))
    differential(prog)


@pytest.mark.clause("LEAF-2")
def test_results_that_do_not_require_grad_are_leaves(differential):
    def prog(torch, log):
        a = torch.tensor([[1.0, -2.0], [3.0, 4.0]], dtype=torch.float64)
        outs = {
            "matmul": a @ a, "abs.t": a.abs().t(), "mean(dim)": a.mean(1),
            "select": a[1], "int": torch.arange(5) - 2, "bool": torch.tensor([True, False]),
            "grad input detached": torch.ones(2, requires_grad=True).detach() * 2,
        }
        for label, t in outs.items():
            log(label, flags(t))
    differential(prog)


@pytest.mark.clause("LEAF-3")
def test_no_grad_results_are_leaves(differential):
    def prog(torch, log):
        w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        h = w * 2                               # a non-leaf made before the block
        with torch.no_grad():
            outs = {"matmul": w @ w, "sum": h.sum(), "clone": h.clone(), "pow": w ** 2,
                    "reshape": w.reshape(4), "index": h[0]}
        for label, t in outs.items():
            log(label, [t.is_leaf, t.grad_fn is None])
        log("values", [outs["matmul"], outs["sum"]])
    differential(prog)


@pytest.mark.clause("LEAF-4")
def test_detached_values_act_as_constants(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        log("detach of leaf", flags(x.detach()))
        h = x.exp()
        d = h.detach()
        log("detach of non-leaf", flags(d))
        log("values", d)
        y = (x * x.detach()).sum()              # gradient through one factor only
        y.backward()
        log("x.grad", x.grad)
        log("dtype kept", d.dtype == torch.float64)
    differential(prog)


@pytest.mark.clause("LEAF-5")
def test_only_leaves_that_require_grad_get_grad(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
        w = torch.tensor([[0.5, -1.0], [2.0, 0.0], [1.0, 1.0]], dtype=torch.float64,
                         requires_grad=True)
        b = torch.tensor([0.1, 0.2], dtype=torch.float64, requires_grad=True)
        h = x @ w + b
        loss = h.relu().sum() + (h * h).mean()
        loss.backward()
        log("w.grad", w.grad)
        log("b.grad", b.grad)
        log("x.grad", x.grad)
        seen = log.attempt("read h.grad", lambda: h.grad)   # logs the warning kind too
        log("h.grad is None", seen is None)
    differential(prog)


@pytest.mark.clause("LEAF-6")
def test_grad_is_none_until_a_backward_reaches_the_leaf(differential):
    def prog(torch, log):
        a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        b = torch.tensor(3.0, requires_grad=True)
        log("fresh", [a.grad is None, b.grad is None])
        y = (a * 2).sum()
        z = b * b
        log("after forward", [a.grad is None, b.grad is None])
        y.backward()
        log("after y.backward", [a.grad is None, b.grad is None])
        z.backward()
        log("b.grad", b.grad)
    differential(prog)


@pytest.mark.clause("LEAF-7")
def test_grad_accumulates_over_different_graphs(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        (x * x).sum().backward()
        log("after 1", x.grad)
        x.sin().sum().backward()
        log("after 2", x.grad)
        (x @ x).mean().backward()
        log("after 3", x.grad)
    differential(prog)


@pytest.mark.clause("LEAF-8")
def test_broadcast_gradients_are_summed_to_leaf_shape(differential):
    def prog(torch, log):
        a = torch.tensor([[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]], dtype=torch.float64,
                         requires_grad=True)               # (2, 1, 3)
        b = torch.tensor([[1.0, 0.0, -1.0]] * 4, dtype=torch.float64,
                         requires_grad=True)               # (4, 3)
        s = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
        one = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
        y = (a * b + s) * one                              # (2, 4, 3)
        y.sum().backward()
        log("a.grad", a.grad)
        log("b.grad", b.grad)
        log("s.grad", s.grad)
        log("one.grad", one.grad)
        e = torch.tensor([[1.0], [2.0]], requires_grad=True)
        (e.expand(2, 5) * torch.arange(5.0)).sum().backward()
        log("e.grad", e.grad)
    differential(prog)


@pytest.mark.clause("LEAF-9")
def test_grad_matches_leaf_shape_and_dtype(differential):
    def prog(torch, log):
        d = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        f = torch.tensor([[3.0], [4.0]], requires_grad=True)   # float32
        s = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
        (d * f * s).sum().backward()
        log("d.grad", [list(d.grad.shape), d.grad.dtype == torch.float64, d.grad])
        log("f.grad", [list(f.grad.shape), f.grad.dtype == torch.float32, f.grad])
        log("s.grad", [list(s.grad.shape), s.grad.dtype == torch.float64, s.grad])
        log("grads require grad", [g.requires_grad for g in (d.grad, f.grad, s.grad)])
    differential(prog)


@pytest.mark.clause("LEAF-10")
def test_backward_leaves_unreached_leaves_alone(differential):
    def prog(torch, log):
        a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        b = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
        c = torch.tensor([5.0, 6.0], dtype=torch.float64, requires_grad=True)
        (a * b).sum().backward()
        log("after first", [a.grad, b.grad, c.grad is None])
        (c * b.detach()).sum().backward()
        log("after second", [a.grad, b.grad, c.grad])
        z = torch.tensor([-1.0, 3.0], requires_grad=True)
        (z.clamp(0.0, 1.0) + z * 0).sum().backward()      # reached, but gradient is zero
        log("zero path", z.grad)
    differential(prog)


@pytest.mark.clause("LEAF-11")
def test_requires_grad_flag_changes_only_on_leaves(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
        log("leaf on", x.requires_grad_(True).requires_grad)
        h = x.t() @ x
        log.attempt("non-leaf off", lambda: h.requires_grad_(False))
        log.attempt("non-leaf on", lambda: h.requires_grad_(True))
        log("non-leaf after", [h.requires_grad, h.is_leaf])
        h.sum().backward()                         # the graph is intact
        log("x.grad", x.grad)
        log("leaf off", x.requires_grad_(False).requires_grad)
        log("new ops", (x * 2).requires_grad)
    differential(prog)


@pytest.mark.clause("LEAF-12")
def test_grad_assignment_checks_shape(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64, requires_grad=True)
        f64 = torch.float64
        bad = {"flat": torch.zeros(3, dtype=f64), "row": torch.zeros(1, 3, dtype=f64),
               "scalar": torch.tensor(1.0, dtype=f64), "bigger": torch.zeros(3, 2, dtype=f64)}
        for label, g in bad.items():
            def assign(g=g):
                x.grad = g
            log.attempt(label, assign)
        log("still None", x.grad is None)
        x.grad = torch.tensor([[1.0], [1.0], [1.0]], dtype=f64)
        (x * x).sum().backward()
        log("accumulated", x.grad)
    differential(prog)


@pytest.mark.clause("LEAF-13")
def test_grad_assignment_checks_dtype(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        x.grad = torch.tensor([0.5, 0.5], dtype=torch.float64)
        bad = {"float32": torch.tensor([1.0, 1.0]), "int64": torch.tensor([1, 1]),
               "bool": torch.tensor([True, False]), "float32 wrong shape": torch.ones(3)}
        for label, g in bad.items():
            def assign(g=g):
                x.grad = g
            log.attempt(label, assign)
        log("unchanged", x.grad)
    differential(prog)


@pytest.mark.clause("LEAF-14")
def test_grad_none_restarts_accumulation(differential):
    def prog(torch, log):
        w = torch.tensor([[1.0, -1.0], [0.5, 2.0]], dtype=torch.float64, requires_grad=True)
        for step in range(3):
            w.grad = None
            for _ in range(step + 1):
                (w * w * w).sum().backward()
            log(f"step {step}", w.grad)
        w.grad = None
        log("reset", w.grad is None)
    differential(prog)


@pytest.mark.clause("LEAF-15")
def test_only_floating_dtypes_require_grad(differential):
    def prog(torch, log):
        log.attempt("arange int", lambda: torch.arange(3, requires_grad=True))
        log.attempt("zeros bool", lambda: torch.zeros(2, dtype=torch.bool, requires_grad=True))
        log.attempt("ones_like int", lambda: torch.ones_like(torch.arange(2), requires_grad=True))
        log.attempt("int requires_grad_", lambda: torch.arange(4).requires_grad_())
        log.attempt("bool requires_grad_(True)",
                    lambda: torch.tensor([True]).requires_grad_(True))
        log("int requires_grad_(False)", torch.arange(4).requires_grad_(False).requires_grad)
        log("float64 ok", torch.zeros(2, dtype=torch.float64).requires_grad_().requires_grad)
    differential(prog)


@pytest.mark.clause("LEAF-16")
def test_freezing_a_leaf_mid_graph_skips_only_that_leaf(differential):
    def prog(torch, log):
        a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        b = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
        y = (a * b).exp().sum()
        a.requires_grad_(False)
        log("backward", log.attempt("backward", lambda: y.backward()))
        log("a.grad", a.grad)
        log("b.grad", b.grad)
        a.requires_grad_(True)
        (a * b).sum().backward()
        log("a.grad after re-enabling", a.grad)
    differential(prog)


NOT_BOOL = {"0": 0, "1": 1, "None": None, "1.0": 1.0, "'yes'": "yes", "0-d tensor": "tensor"}


@pytest.mark.clause("LEAF-11")
@pytest.mark.clause("LEAF-15")
@pytest.mark.clause("MODE-3")
@pytest.mark.clause("INFER-1")
@pytest.mark.parametrize("value", list(NOT_BOOL))
def test_a_flag_or_switch_that_is_not_a_bool_is_refused(differential, value):
    """torch's argument parser takes only a bool for requires_grad_, a factory's
    requires_grad= (None too, as False, except torch.tensor) and set_grad_enabled: TypeError,
    before any other check; the setter raises RuntimeError. Nothing changes."""
    def prog(torch, log):
        v = NOT_BOOL[value]
        if v == "tensor":
            v = torch.tensor(True)
        leaf = torch.tensor([1.0, 2.0])
        grad_leaf = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        nonleaf = grad_leaf * 2
        ints = torch.tensor([1, 2])

        def setter(t):
            t.requires_grad = v

        def inference_block():      # any value but a bool is taken as a function to decorate
            with torch.inference_mode(v):
                pass
        calls = {"requires_grad_ leaf": lambda: leaf.requires_grad_(v),
                 "requires_grad_ leaf requiring grad": lambda: grad_leaf.requires_grad_(v),
                 "requires_grad_ non-leaf": lambda: nonleaf.requires_grad_(v),
                 "requires_grad_ int": lambda: ints.requires_grad_(v),
                 "setter leaf": lambda: setter(leaf), "setter non-leaf": lambda: setter(nonleaf),
                 "setter int": lambda: setter(ints),
                 "tensor": lambda: torch.tensor([1.0], requires_grad=v),
                 "ones": lambda: torch.ones(2, requires_grad=v),
                 "zeros_like": lambda: torch.zeros_like(leaf, requires_grad=v),
                 "full": lambda: torch.full((2,), 3.0, requires_grad=v),
                 "int ones": lambda: torch.ones(2, dtype=torch.int64, requires_grad=v),
                 "set_grad_enabled": lambda: torch.set_grad_enabled(v),
                 "inference_mode": inference_block}
        try:
            for label, call in calls.items():
                try:
                    out = call()
                    log(label, ["ok", getattr(out, "requires_grad", None)])
                except Exception as exc:    # no spec error kind: the exception type
                    log(label, type(exc).__name__)
                log(label + " after", [torch.is_grad_enabled(), leaf.requires_grad,
                                       grad_leaf.requires_grad, nonleaf.requires_grad,
                                       ints.requires_grad])
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("LEAF-12")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (2,), (2, 3)])
def test_a_tensor_cannot_be_assigned_as_its_own_grad(differential, dtype, shape):
    """`t.grad = t` raises GRAD_ASSIGN_SELF on a leaf (with or without a .grad, with a
    grad_dtype that t's dtype does not match: checked first), a non-leaf and a constant, and
    leaves .grad as it was; t.detach() and t.data are other tensors, accepted."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        other = torch.float32 if dtype == "float64" else torch.float64
        x = torch.full(shape, 1.5, dtype=dt, requires_grad=True)
        c = torch.full(shape, 2.0, dtype=dt)
        y = x * 2
        for label, t in (("leaf", x), ("non-leaf", y), ("constant", c)):
            def assign(t=t):
                t.grad = t
            log.attempt(label, assign)
        log("leaf .grad", x.grad)
        log("constant .grad", c.grad)
        x.grad = torch.full(shape, 0.5, dtype=dt)
        log.attempt("leaf with a .grad", lambda: setattr(x, "grad", x))
        (x * 3).sum().backward()
        log("leaf and .grad after backward", [x, x.grad])
        x.grad = None
        x.grad_dtype = other
        log.attempt("grad_dtype of another dtype", lambda: setattr(x, "grad", x))
        x.grad_dtype = dt
        for label, value in (("detach", x.detach()), ("data", x.data)):
            x.grad = None
            log.attempt(label, lambda value=value: setattr(x, "grad", value))
            (x * 3).sum().backward()
            log(label + ": leaf and .grad", [x.detach().clone(), x.grad])
    differential(prog)


@pytest.mark.clause("LEAF-9", "LEAF-12", "LEAF-13", "RETAIN-7")
@pytest.mark.parametrize("value", ["float64", 5, 1.0, None, "dtype float32", "dtype float64"])
def test_what_grad_dtype_and_grad_are_set_to_is_checked(differential, value):
    """grad_dtype takes a dtype or None (RuntimeError otherwise), on a leaf only, and its
    setter reads .grad first (a non-leaf that does not retain its gradient warns
    NONLEAF_GRAD_ACCESS before it refuses); .grad takes a tensor or None (TypeError)."""
    def prog(torch, log):
        given = getattr(torch, value.split()[1]) if str(value).startswith("dtype") else value
        for kind in ("leaf", "leaf with a .grad", "non-leaf", "retaining non-leaf", "view",
                     "not requiring grad"):
            x = torch.tensor([1.0, 2.0], requires_grad=kind != "not requiring grad")
            t = {"non-leaf": x * 2, "retaining non-leaf": x * 2, "view": x.view(2)}.get(kind, x)
            if kind == "leaf with a .grad":
                x.grad = torch.ones(2)
            if kind == "retaining non-leaf":
                t.retain_grad()

            def assign(t=t):
                t.grad_dtype = given
            log.attempt(f"{kind}: grad_dtype = {value}", assign)
            if t.is_leaf:
                log("grad_dtype", str(t.grad_dtype))
        x = torch.tensor([1.0, 2.0], requires_grad=True)

        def assign_grad(x=x):
            x.grad = given
        log.attempt(f".grad = {value}", assign_grad)
        log(".grad", x.grad)
    differential(prog)


@pytest.mark.clause("API-7")
def test_is_grads_batched_is_outside_refimpl(differential):
    """autograd.grad's is_grads_batched (vmap) is outside the spec: refimpl refuses it rather
    than compute an unbatched result; with it False both compute the same."""
    import refimpl
    x = refimpl.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="is_grads_batched"):
        refimpl.autograd.grad(x * x, x, refimpl.eye(2) if hasattr(refimpl, "eye") else
                              refimpl.ones(2, 2), is_grads_batched=True)

    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        log("grad", torch.autograd.grad(x * x, x, torch.ones(2), is_grads_batched=False))
    differential(prog)
