"""Differential tests for `.data =` and `set_()`: DATA-1 to DATA-8 and UNSPEC-12 (spec/data.md).

Grad mode is global to the thread, so programs that turn it off use `with torch.no_grad()`,
which restores it even when the engine under test raises.
"""
import pytest

DTYPES = ("float32", "float64")
# 0-d, 1-d and 2-d contents for `.data =` and set_()
CONTENTS = (4.0, [1.0, -2.0, 3.0], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
CONTENT_IDS = ("0d", "1d", "2d")


@pytest.mark.clause("DATA-1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("values", CONTENTS, ids=CONTENT_IDS)
@pytest.mark.parametrize("grad_mode", (True, False))
def test_data_assignment_keeps_the_tensor_and_its_autograd_state(differential, dtype, values,
                                                                 grad_mode):
    def prog(torch, log):
        other = getattr(torch, "float32" if dtype == "float64" else "float64")
        leaf = torch.tensor([1.0, 2.0], dtype=getattr(torch, dtype), requires_grad=True)
        plain = torch.tensor([[1.0], [2.0]], dtype=getattr(torch, dtype))
        nonleaf = leaf * 3
        names = {"leaf": leaf, "plain": plain, "nonleaf": nonleaf}
        before = {k: [t.requires_grad, t.is_leaf, t.grad_fn is None] for k, t in names.items()}
        with torch.set_grad_enabled(grad_mode):
            for t in names.values():
                t.data = torch.tensor(values, dtype=other, requires_grad=True)
        for label, t in names.items():
            log(label + " same object", t is names[label])
            log(label + " contents", [t.tolist(), list(t.shape), str(t.dtype)])
            log(label + " autograd state", [t.requires_grad, t.is_leaf, t.grad_fn is None])
            log(label + " unchanged", before[label] == [t.requires_grad, t.is_leaf,
                                                        t.grad_fn is None])
        log("nonleaf node", nonleaf.grad_fn.name())
    differential(prog)


@pytest.mark.clause("DATA-1")
@pytest.mark.parametrize("dtype", DTYPES)
def test_hooks_and_retain_grad_survive_data_assignment(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        h = x * 2
        h.retain_grad()
        seen = []
        x.register_hook(lambda g: seen.append(("x", g.tolist())))
        h.register_hook(lambda g: seen.append(("h", g.tolist())))
        x.data = torch.tensor([3.0, 4.0], dtype=dt)
        h.data = torch.tensor([5.0, -6.0], dtype=dt)
        (h * 3).sum().backward()
        log("hook calls", seen)
        log("h.grad", h.grad)
        log("x.grad", x.grad)
        log("retains_grad", h.retains_grad)
    differential(prog)


@pytest.mark.clause("DATA-2")
@pytest.mark.parametrize("values", CONTENTS, ids=CONTENT_IDS)
@pytest.mark.parametrize("requires_grad", (False, True))
def test_data_assignment_shares_storage_but_not_the_version_counter(differential, values,
                                                                    requires_grad):
    def prog(torch, log):
        t = torch.zeros(2, dtype=torch.float64, requires_grad=requires_grad)
        h = t * 1 if requires_grad else t
        with torch.no_grad():
            h.add_(1.0)
        src = torch.tensor(values, dtype=torch.float64)
        src.mul_(1.0)
        src.mul_(1.0)
        log("versions before", [h._version, src._version])
        h.data = src
        log("versions after", [h._version, src._version])
        src.add_(10.0)
        log("h sees src's write", h)
        log("versions after src's write", [h._version, src._version])
        with torch.no_grad():
            h.mul_(2.0)
        log("src sees h's write", src)
        log("versions after h's write", [h._version, src._version])
    differential(prog)


@pytest.mark.clause("DATA-3")
@pytest.mark.parametrize("dtype", DTYPES)
def test_views_and_detached_tensors_keep_the_old_storage(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        n = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dt)
        row, col, d = n[0], n.t(), n.detach()
        n.data = torch.tensor([9.0, 8.0, 7.0])
        log("after assignment", [row.tolist(), col.tolist(), d.tolist(), n.tolist()])
        n.add_(1.0)
        log("after writing n", [row.tolist(), d.tolist(), n.tolist()])
        log("versions", [n._version, row._version, col._version, d._version])
        row.mul_(2.0)
        log("after writing a view", [n.tolist(), col.tolist(), d.tolist()])
        log("versions again", [n._version, row._version, d._version])
        x = torch.tensor([1.0, 2.0, 3.0], dtype=dt, requires_grad=True)
        v = x[1:]
        x.data = torch.zeros(3, dtype=dt)
        log("view of a leaf", [v.tolist(), x._version, v._version])
    differential(prog)


@pytest.mark.clause("DATA-4")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("saved", ("leaf input", "nonleaf input", "output"))
def test_data_assignment_does_not_trip_the_version_check(differential, dtype, saved):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        a = torch.tensor([0.5, 1.0], dtype=dt, requires_grad=True)
        if saved == "leaf input":
            t, y = a, (a * a).sum()
        elif saved == "nonleaf input":
            t = a * 1
            y = t.sin().sum()
        else:
            t = a.exp()
            y = (t * 1).sum()
        t.data = torch.tensor([2.0, 3.0], dtype=dt)
        log("version", t._version)
        log.attempt("backward", lambda: y.backward())
        log("a has a gradient", a.grad is not None)  # its values: UNSPEC-12
    differential(prog)


@pytest.mark.clause("DATA-4")
@pytest.mark.parametrize("values", CONTENTS, ids=CONTENT_IDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_ops_after_data_assignment_use_the_new_contents(differential, values, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.data = torch.tensor(values, dtype=dt)
        y = (x * x.sin()).sum()
        log("y", y)
        y.backward()
        log("x.grad", x.grad)
        log("x.grad dtype and shape", [str(x.grad.dtype), list(x.grad.shape)])
        b = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        c = b * 2
        c.data = torch.tensor([3.0, 4.0], dtype=dt)
        (c * c).sum().backward()
        log("b.grad through the non-leaf", b.grad)
    differential(prog)


@pytest.mark.clause("DATA-5")
@pytest.mark.parametrize("new_dtype", DTYPES)
@pytest.mark.parametrize("new_size", (2, 3))
def test_grad_and_grad_dtype_after_data_assignment(differential, new_dtype, new_size):
    def prog(torch, log):
        dt = getattr(torch, new_dtype)
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        g = x.grad
        x.data = torch.ones(new_size, dtype=dt)
        log(".grad kept", [x.grad is g, x.grad.tolist(), str(x.grad.dtype)])
        log("grad_dtype", str(x.grad_dtype))
        log.attempt("assign float32 of the new size",
                    lambda: setattr(x, "grad", torch.zeros(new_size)))
        log.attempt("assign new dtype of the old size",
                    lambda: setattr(x, "grad", torch.zeros(2, dtype=dt)))
        log.attempt("assign new dtype and size",
                    lambda: setattr(x, "grad", torch.full((new_size,), 7.0, dtype=dt)))
        log("x.grad", x.grad)
        for kept in ("float32", "float64", None):
            w = torch.tensor([1.0, 2.0], requires_grad=True)
            w.grad_dtype = getattr(torch, kept) if kept else None
            w.data = torch.ones(new_size, dtype=dt)
            log(f"grad_dtype set to {kept}", str(w.grad_dtype))
    differential(prog)


@pytest.mark.clause("DATA-6")
@pytest.mark.parametrize("target", ("leaf", "nonleaf", "view", "plain"))
@pytest.mark.parametrize("grad_mode", (True, False))
def test_data_assignment_refuses_integer_data_on_tensors_that_require_grad(differential, target,
                                                                           grad_mode):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        t = {"leaf": x, "nonleaf": x * 2, "view": x[0:1], "plain": torch.zeros(2)}[target]
        with torch.set_grad_enabled(grad_mode):
            for label, data in (("int64", torch.tensor([1, 2])),
                                ("bool", torch.tensor([True, False])),
                                ("list", [1.0, 2.0]), ("None", None)):
                log.attempt(label, lambda data=data: setattr(t, "data", data))
                log(label + " left", [t.tolist(), str(t.dtype)])
                t.data = torch.tensor([0.5])  # back to floating point for the next attempt
            log.attempt("float64", lambda: setattr(t, "data", torch.ones(3, dtype=torch.float64)))
        log("contents", [t.tolist(), str(t.dtype), t.requires_grad])
        if target == "plain":
            t.data = torch.tensor([3, 4])
            log.attempt("requires_grad_ on integer data", lambda: t.requires_grad_())
    differential(prog)


@pytest.mark.clause("DATA-7")
@pytest.mark.parametrize("values", CONTENTS, ids=CONTENT_IDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("grad_mode", (True, False))
def test_set_shares_storage_and_counts_one_write(differential, values, dtype, grad_mode):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        t = torch.zeros(2, dtype=dt)
        src = torch.tensor(values, dtype=dt)
        with torch.set_grad_enabled(grad_mode):
            r = t.set_(src)
            log("returns t", r is t)
            log("contents", [t.tolist(), list(t.shape)])
            log("versions", [t._version, src._version])
            src.add_(1.0)
            log("t sees src's write", t)
            t.mul_(3.0)
            log("src sees t's write", src)
            log("versions after writes", [t._version, src._version])
            t.set_(t)
            log("set_ to itself", t._version)
            other = torch.float32 if dtype == "float64" else torch.float64
            log.attempt("another dtype", lambda: t.set_(torch.zeros(2, dtype=other)))
            log("left", [t.tolist(), str(t.dtype), t._version])
    differential(prog)


@pytest.mark.clause("DATA-8")
@pytest.mark.parametrize("dtype", DTYPES)
def test_set_on_a_leaf_that_requires_grad(differential, dtype):
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        log.attempt("set_ on the leaf", lambda: x.set_(torch.ones(3, dtype=dt)))
        log.attempt("set_ on a view of it", lambda: x[0:1].set_(torch.ones(1, dtype=dt)))
        log.attempt("another dtype first", lambda: x.set_(torch.ones(1, dtype=torch.long)))
        log("left", [x.tolist(), x._version, x.is_leaf])
        y = (x * x).sum()
        with torch.no_grad():
            x.set_(torch.tensor([5.0, 6.0, 7.0], dtype=dt))
        log("under no_grad", [x.tolist(), x._version, x.is_leaf, x.requires_grad])
        log.attempt("backward of a graph that saved x", lambda: y.backward())
        (x * x).sum().backward()
        log("x.grad of a new graph", x.grad)
    differential(prog)


@pytest.mark.clause("DATA-8")
@pytest.mark.parametrize("case", ("nonleaf", "src requires grad", "src nonleaf", "neither"))
@pytest.mark.parametrize("grad_mode", (True, False))
def test_set_records_a_node_without_a_derivative(differential, case, grad_mode):
    def prog(torch, log):
        a = torch.tensor([[1.0, 2.0]], dtype=torch.float64, requires_grad=True)
        b = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
        t = a.exp() if case == "nonleaf" else torch.zeros(1, dtype=torch.float64)
        # the same shape for the non-leaf: which error a backward through its old node raises
        # after set_ changed its shape under no_grad is unspecified (UNSPEC-12)
        src = {"nonleaf": torch.ones(1, 2, dtype=torch.float64), "src requires grad": b,
               "src nonleaf": b * 2, "neither": torch.ones(2, dtype=torch.float64)}[case]
        with torch.set_grad_enabled(grad_mode):
            t.set_(src)
        log("state", [t.requires_grad, t.is_leaf, t._version])
        log("node", t.grad_fn.name() if t.grad_fn is not None else None)
        if t.grad_fn is not None:
            log.attempt("backward", lambda: (t * 2).sum().backward())
            log.attempt("autograd.grad", lambda: torch.autograd.grad(t.sum(), a if case ==
                                                                     "nonleaf" else b))
    differential(prog)


@pytest.mark.clause("DATA-8")
def test_set_while_recording_trips_the_version_check(differential):
    def prog(torch, log):
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        h = a * 1
        y = (h * h).sum()
        z = (h + 1).sum()
        h.set_(torch.tensor([10.0, 20.0]))
        log("h", [h._version, h.grad_fn.name()])
        log.attempt("backward of a graph that saved h", lambda: y.backward())
        log.attempt("backward of one that did not", lambda: z.backward())
        log("a.grad", a.grad)
    differential(prog)


@pytest.mark.clause("DATA-8", "HOOK-14")
@pytest.mark.parametrize("other", ("hooked", "stale saved value", "freed"))
@pytest.mark.parametrize("set_made", ("first", "last"))
@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("api", ("backward", "autograd.grad"))
def test_the_node_of_set_runs_as_soon_as_it_is_ready(differential, other, set_made, dtype,
                                                      api):
    """set_'s node and a node on another branch become ready at once: set_'s runs first,
    whichever was recorded last, so that neither a hook there, nor a stale saved value's check,
    nor a freed node's comes first."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        w = torch.tensor([0.5, 2.0], dtype=dt, requires_grad=True)
        p = torch.zeros(2, dtype=dt)

        def branch():
            r = w.relu() * 1 if other != "stale saved value" else w.relu()
            if other == "hooked":
                r.register_hook(lambda g: log("hook on the other branch", g))
            elif other == "stale saved value":
                r.add_(1.0)         # relu saved its result, which this write makes stale
            else:
                r.sum().backward(retain_graph=False)
            return r
        if set_made == "last":
            r = branch()
        p.set_(w * 3)
        if set_made == "first":
            r = branch()
        log("node", p.grad_fn.name())
        root = (p + r).sum()
        if api == "backward":
            log.attempt("backward", lambda: root.backward())
        else:
            log.attempt("autograd.grad", lambda: torch.autograd.grad(root, w))
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("UNSPEC-12")
def test_a_stale_grad_keeps_its_dtype_until_a_backward(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        x.data = torch.tensor([1.0, 2.0], dtype=torch.float64)
        log(".grad dtype", str(x.grad.dtype))
        log("grad_dtype", str(x.grad_dtype))
        x.grad = None
        (x * x).sum().backward()     # with the stale .grad gone, the gradient is specified
        log("x.grad", [x.grad.tolist(), str(x.grad.dtype)])
    differential(prog)
