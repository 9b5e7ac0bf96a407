"""Differential tests for API-1 .. API-12 (spec/api.md): `backward` with and without `gradient`,
`inputs=`, `torch.autograd.backward`, and `torch.autograd.grad` with its arguments and errors.

Errors are logged by kind (spec/errors.md) together with the `.grad` state they leave behind;
torch's log is the expected one.
"""
import pytest


@pytest.mark.clause("API-1")
def test_implicit_gradient_only_for_one_element_outputs(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        y = x * x
        log.attempt("2x2 output", lambda: y.backward())
        log("x.grad after refusal", x.grad)
        log.attempt("1x1 output", lambda: y[1:, :1].backward(retain_graph=True))
        log("x.grad after 1x1", x.grad)
        log.attempt("0-d output", lambda: y[0, 1].backward(retain_graph=True))
        log("x.grad after 0-d", x.grad)
        log.attempt("mean keepdim output", lambda: y.mean(dim=(0, 1), keepdim=True).backward())
        log("x.grad after mean", x.grad)
    differential(prog)


@pytest.mark.clause("API-2")
def test_vjp_through_broadcast_and_reduction(differential):
    def prog(torch, log):
        a = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
        b = torch.tensor([[0.5], [-1.0]], dtype=torch.float64, requires_grad=True)
        y = (a * b).sum(dim=1)                  # shape (2,)
        y.backward(gradient=torch.tensor([2.0, -3.0], dtype=torch.float64))
        log("a.grad", a.grad)
        log("b.grad", b.grad)
        z = a.t().matmul(b.t())                 # (3, 2)
        v = torch.arange(6, dtype=torch.float64).reshape(3, 2)
        z.backward(v)
        log("a.grad after second vjp", a.grad)
        log("b.grad after second vjp", b.grad)
    differential(prog)


@pytest.mark.clause("API-3")
def test_gradient_shape_must_match_exactly(differential):
    def prog(torch, log):
        x = torch.ones(2, 3, requires_grad=True)
        y = x * 2
        log.attempt("transposed shape", lambda: y.backward(torch.ones(3, 2), retain_graph=True))
        log.attempt("same numel, flat", lambda: y.backward(torch.ones(6), retain_graph=True))
        log.attempt("broadcastable row", lambda: y.backward(torch.ones(1, 3), retain_graph=True))
        log("x.grad after refusals", x.grad)
        s = y.sum()
        log.attempt("0-d output, shape [1]", lambda: s.backward(torch.ones(1), retain_graph=True))
        log.attempt("0-d output, 0-d gradient", lambda: s.backward(torch.tensor(2.0)))
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("API-4")
def test_outputs_without_grad_fn_are_rejected(differential):
    def prog(torch, log):
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        with torch.no_grad():
            y = (w * 3).sum()
        log.attempt("backward from no_grad result", lambda: y.backward())
        d = (w * 3).sum().detach()
        log.attempt("backward from detached", lambda: d.backward())
        c = torch.ones(2, dtype=torch.float64).sum()
        log.attempt("autograd.grad from constant", lambda: torch.autograd.grad(c, w))
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("API-5")
def test_backward_on_2d_leaf_accumulates(differential):
    def prog(torch, log):
        w = torch.zeros(2, 2, dtype=torch.float64, requires_grad=True)
        for i in range(3):
            log.attempt(f"backward {i + 1}",
                        lambda i=i: w.backward(torch.ones(2, 2, dtype=torch.float64) * (i + 1)))
        log("w.grad", w.grad)
        one = torch.ones(1, 1, requires_grad=True)
        log.attempt("one-element leaf, implicit gradient", lambda: one.backward())
        log("one.grad", one.grad)
    differential(prog)


@pytest.mark.clause("API-6")
def test_autograd_grad_tuple_order_and_no_side_effects(differential):
    def prog(torch, log):
        a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        b = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
        out = (a * b).pow(2).sum()
        g = torch.autograd.grad(out, (b, a), retain_graph=True)
        log("grads (b, a)", g)
        log("is tuple", isinstance(g, tuple))
        log("requires_grad", [t.requires_grad for t in g])
        log("a.grad", a.grad)
        log("b.grad", b.grad)
        log("again, list of one", torch.autograd.grad(out, [a]))
    differential(prog)


@pytest.mark.clause("API-7")
def test_unused_inputs_positions(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = torch.tensor([3.0], requires_grad=True)
        other = x * 5                            # a non-leaf the output does not use
        y = x.cos().sum()
        log.attempt("unused non-leaf", lambda: torch.autograd.grad(y, other, retain_graph=True))
        log.attempt("unused first", lambda: torch.autograd.grad(y, [w, x], retain_graph=True))
        log("allow_unused",
            torch.autograd.grad(y, [w, x, other], allow_unused=True, retain_graph=True))
        z = (x * 0).sum()                        # used, with a zero gradient: not None
        log("used with zero gradient", torch.autograd.grad(z, x))
    differential(prog)


@pytest.mark.clause("API-8")
def test_inputs_that_do_not_require_grad(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        c = torch.tensor([3.0, 4.0], dtype=torch.float64)
        y = (x * 2).sum()
        log.attempt("constant input alone", lambda: torch.autograd.grad(y, c))
        d = x.detach()
        log.attempt("detached input last", lambda: torch.autograd.grad(y, [x, d]))
        log("graph still usable", torch.autograd.grad(y, x))
    differential(prog)


@pytest.mark.clause("API-9")
def test_grad_outputs_for_several_outputs(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, -1.0], [2.0, 0.5]], dtype=torch.float64, requires_grad=True)
        y1 = x.exp()
        y2 = x.sum(dim=0)
        v1 = torch.ones(2, 2, dtype=torch.float64)
        v2 = torch.tensor([1.0, -2.0], dtype=torch.float64)
        log("two outputs", torch.autograd.grad([y1, y2], x, grad_outputs=[v1, v2],
                                               retain_graph=True))
        log.attempt("None for a 2-element output",
                    lambda: torch.autograd.grad([y1, y2], x, grad_outputs=[v1, None],
                                                retain_graph=True))
        log.attempt("wrong shape for first output",
                    lambda: torch.autograd.grad([y2, y1], x, grad_outputs=[v1, v1],
                                                retain_graph=True))
        try:    # a later output: torch raises, but not GRAD_OUTPUT_SHAPE (spec/api.md, API-9)
            torch.autograd.grad([y1, y2], x, grad_outputs=[v1, v1])
            log("later output of wrong shape raises", False)
        except RuntimeError:
            log("later output of wrong shape raises", True)
    differential(prog)


@pytest.mark.clause("API-10")
def test_grad_wrt_view_and_intermediate(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        h = x.reshape(2, 2)                       # a view of a leaf
        m = h.matmul(h)
        out = (m * m).sum()
        log("grad wrt view", torch.autograd.grad(out, h, retain_graph=True))
        log("grad wrt m and x", torch.autograd.grad(out, [m, x], retain_graph=True))
        log("m retains", m.retains_grad)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("API-11")
def test_backward_inputs_leaf_subset_and_nonleaf(differential):
    def prog(torch, log):
        a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        b = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
        h = a * b
        out = (h * h).sum()
        out.backward(inputs=[h, b], retain_graph=True)
        log("a.grad", a.grad)
        log("b.grad", b.grad)
        log("h.grad", h.grad)
        log("h retains", h.retains_grad)
        out.backward(retain_graph=True)            # a full pass now also fills h
        log("a.grad after full pass", a.grad)
        log("h.grad after full pass", h.grad)
        try:    # no error kind for this one: its message starts with a backquote
            out.backward(inputs=[])
            log("empty inputs raise", False)
        except RuntimeError:
            log("empty inputs raise", True)
    differential(prog)


@pytest.mark.clause("API-12")
def test_autograd_backward_three_roots(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        h = x.sin()
        calls = []
        h.register_hook(lambda g: calls.append(g.tolist()))
        r1 = h.sum()
        r2 = h * 2
        r3 = (h * h).mean()
        torch.autograd.backward([r1, r2, r3],
                                [None, torch.tensor([1.0, -1.0], dtype=torch.float64), None])
        log("hook calls", calls)
        log("x.grad", x.grad)
        log.attempt("None for a 2-element tensor",
                    lambda: torch.autograd.backward([(x * 2)], [None]))
    differential(prog)


@pytest.mark.clause("API-7")
@pytest.mark.clause("API-12")
@pytest.mark.parametrize("form", ["list", "tuple"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_empty_outputs_use_no_input(differential, form, dtype):
    """No outputs: autograd.grad finds every input unused (UNUSED_INPUT, None, or zeros with
    materialize_grads), still refusing one that does not require grad; autograd.backward runs
    nothing and raises only what inputs= raises, its non-leaves left retaining."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        empty = [] if form == "list" else ()
        x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        s = torch.tensor(3.0, dtype=dt, requires_grad=True)
        c = torch.tensor([1.0, 2.0], dtype=dt)
        y = x * 2
        grad = torch.autograd.grad
        log.attempt("grad, one input", lambda: grad(empty, x))
        log.attempt("grad, second input", lambda: grad(empty, [x, s][::-1]))
        log("grad, allow_unused", grad(empty, [x, y, s], allow_unused=True))
        log("grad, dict", grad(empty, {"s": s, "x": x}, allow_unused=True))
        log("grad, materialize", grad(empty, [s, x], materialize_grads=True))
        log("grad, create_graph", grad(empty, x, allow_unused=True, create_graph=True))
        log.attempt("grad, a constant", lambda: grad(empty, [x, c], allow_unused=True))
        log.attempt("grad, no inputs", lambda: grad(empty, []))
        x.grad = torch.tensor([5.0, 6.0], dtype=dt)
        log.attempt("backward", lambda: torch.autograd.backward(empty))
        log.attempt("backward, inputs", lambda: torch.autograd.backward(empty, inputs=[x, y]))
        log("after", [x.grad, s.grad, y.retains_grad])
        log.attempt("backward, a constant", lambda: torch.autograd.backward(empty, inputs=[c]))
        log.attempt("backward, no inputs", lambda: torch.autograd.backward(empty, inputs=[]))
        log.attempt("backward, no grad_tensors", lambda: torch.autograd.backward(empty, []))
        (y * y).sum().backward()
        log("a pass after", [x.grad, y.grad])
    differential(prog)


@pytest.mark.clause("API-9")
@pytest.mark.clause("API-4")
@pytest.mark.parametrize("entry", ["autograd.grad", "autograd.backward"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_pair_with_outputs_as_zip_pairs_them(differential, entry, dtype):
    """Gradients beyond the outputs are ignored, unchecked (a wrong shape, None); fewer than
    the outputs raise a RuntimeError after the pairs' checks (GRAD_OUTPUT_SHAPE,
    IMPLICIT_GRAD_NONSCALAR of the first output win) and before NO_GRAD_FN and the inputs'."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
        c = torch.tensor([1.0, 2.0], dtype=dt)

        def run(outs, gs, constant_input=False):
            if entry == "autograd.grad":
                return torch.autograd.grad(outs, c if constant_input else x, gs)
            x.grad = None
            torch.autograd.backward(outs, gs, inputs=[c] if constant_input else None)
            return x.grad
        one, two = torch.tensor(1.0, dtype=dt), torch.ones(2, dtype=dt)
        cases = {
            "extra tensor": lambda y, a, k: run([y], [one, torch.tensor(5.0, dtype=dt)]),
            "extra of another shape": lambda y, a, k: run([a], [two * 3, torch.ones(7)]),
            "extra None": lambda y, a, k: run((y,), (one, None)),
            "first shape wins": lambda y, a, k: run([a, y], [torch.ones(3)]),
            "first implicit wins": lambda y, a, k: run([a, y], [None]),
            "count": lambda y, a, k: run([y, a], [None]),
            "empty for one": lambda y, a, k: run([y], []),
            "count before NO_GRAD_FN": lambda y, a, k: run([k, y], [None]),
            "count before the inputs": lambda y, a, k: run([y, a], [one], True),
            "a tensor for two": lambda y, a, k: run([y, a], one),
        }
        for label, case in cases.items():
            y, a, k = (x * 3).sum(), x * 2, (c * 2).sum()
            log.attempt(label, lambda case=case, y=y, a=a, k=k, label=label:
                        log(label, case(y, a, k)))
        y = (x * 3).sum()
        log.attempt("Tensor.backward, two", lambda: y.backward((one, one * 2)))
        log("x.grad", x.grad)
        log.attempt("Tensor.backward, none", lambda: (x * 3).sum().backward(()))
    differential(prog)


@pytest.mark.clause("API-9")
@pytest.mark.parametrize("entry", ["autograd.grad", "autograd.backward", "Tensor.backward"])
@pytest.mark.parametrize("value", [2.0, 2, True, [1.0, 2.0], [[1.0, 2.0]]], ids=repr)
def test_a_gradient_that_is_no_tensor_raises_type_error(differential, entry, value):
    """A number or a list where a gradient goes raises TypeError in its pair's place: after an
    earlier output's shape check, before NO_GRAD_FN; a non-tensor beyond the outputs is never
    looked at; .grad is left as it was."""
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        c = torch.tensor([1.0, 2.0])

        def run(outs, gs):
            if entry == "autograd.grad":
                return torch.autograd.grad(outs, x, gs)
            if entry == "autograd.backward":
                return torch.autograd.backward(outs, gs)
            return outs[0].backward(tuple(gs)) if len(outs) == 1 else None
        log.attempt("scalar output", lambda: run([(x * 3).sum()], [value]))
        log.attempt("vector output", lambda: run([x * 3], [value]))
        log.attempt("second pair", lambda: run([(x * 3).sum(), x * 2], [None, value]))
        log.attempt("after a bad shape", lambda: run([x * 3, (x * 2).sum()],
                                                     [torch.ones(3), value]))
        log.attempt("before NO_GRAD_FN", lambda: run([(c * 2).sum()], [value]))
        log.attempt("beyond the outputs", lambda: run([(x * 3).sum()],
                                                      [torch.tensor(1.0), value]))
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("API-7")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (2,), (2, 3)])
def test_materialize_grads_refuses_allow_unused_false_first(differential, dtype, shape):
    """materialize_grads=True gives zeros for an unused input; with allow_unused=False passed
    it raises ValueError before anything else (every input used, no inputs, a constant)."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.full(shape, 1.5, dtype=dt, requires_grad=True)
        u = torch.full(shape, 2.0, dtype=dt, requires_grad=True)
        c = torch.ones(shape, dtype=dt)
        grad = torch.autograd.grad

        def y():
            return (x * 3).sum()
        log("materialized", grad(y(), [x, u], materialize_grads=True))
        log("allow_unused True", grad(y(), [x, u], materialize_grads=True, allow_unused=True))
        for label, ins in (("unused", [x, u]), ("all used", [x]), ("empty", []),
                           ("constant", [x, c])):
            log.attempt(label, lambda ins=ins: grad(y(), ins, materialize_grads=True,
                                                    allow_unused=False))
    differential(prog)


@pytest.mark.clause("API-7")
@pytest.mark.clause("DOUBLE-1")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (2,), (2, 3)])
@pytest.mark.parametrize("create_graph", [False, True])
def test_materialized_zeros_require_grad_under_create_graph(differential, dtype, shape,
                                                            create_graph):
    """The zeros materialize_grads gives for an unused input are a leaf that requires grad
    under create_graph (zeros_like(u, requires_grad=True)), which a later pass reaches."""
    def prog(torch, log):
        dt = getattr(torch, dtype)
        x = torch.full(shape, 1.5, dtype=dt, requires_grad=True)
        u = torch.full(shape, 2.0, dtype=dt, requires_grad=True)
        gx, gu = torch.autograd.grad((x * x).sum(), [x, u], materialize_grads=True,
                                     create_graph=create_graph)
        log("gu", [gu, gu.requires_grad, gu.is_leaf, gu.grad_fn is None, gu.grad_fn is None])
        log("gx", [gx, gx.requires_grad])
        log.attempt("backward through gu", lambda: (gu * 2 + gx).sum().backward())
        log("grads", [x.grad, u.grad, gu.grad if gu.is_leaf else None])
    differential(prog)


@pytest.mark.clause("API-9", "API-11", "API-7", "FREE-7")
@pytest.mark.parametrize("value", [None, "yes", 1, 0, True, 2.0, 300, -1, 2**70, "tensor(True)",
                                   "tensor(0)", "tensor(1.0)"])
def test_what_backward_and_grad_take_for_flags_and_tensors(differential, value):
    """create_graph and retain_graph take what an integer can be read from (TypeError
    otherwise; retain_graph None follows create_graph); every output and input must be a
    tensor (AssertionError, RuntimeError); the deprecated grad_variables is honoured with a
    FutureWarning, and refused beside grad_tensors. No spec kinds: torch 2.13's own checks."""
    def prog(torch, log, value=value):
        if isinstance(value, str) and value.startswith("tensor"):   # one element: __index__
            value = torch.tensor({"tensor(True)": True, "tensor(0)": 0}.get(value, 1.0))
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        truthy_flag = value is True or (type(value) is int and value == 1) or (
            hasattr(value, "dtype") and value.dtype == torch.bool)
        if not truthy_flag:     # (CREATE_GRAPH_CYCLE warns once a process: UNSPEC-9)
            log.attempt("backward create_graph",
                        lambda: (x * x).sum().backward(create_graph=value))
        log.attempt("backward retain_graph", lambda: (x * x).sum().backward(retain_graph=value))
        log.attempt("grad create_graph",
                    lambda: torch.autograd.grad((x * x).sum(), x, create_graph=value))
        log.attempt("grad retain_graph",
                    lambda: torch.autograd.grad((x * x).sum(), x, retain_graph=value))
        if not hasattr(value, "dtype") and value in (None, "yes", 1):
            n = torch.tensor([1.0])             # each input is checked in its turn
            log.attempt("inputs in turn", lambda: (x * x).sum().backward(inputs=[n, value]))
            log.attempt("grad inputs in turn", lambda: torch.autograd.grad((x * x).sum(),
                                                                           [n, value]))
            log.attempt("grad input", lambda: torch.autograd.grad((x * x).sum(), [x, value]))
            log.attempt("backward input", lambda: (x * x).sum().backward(inputs=[value]))
            log.attempt("grad output", lambda: torch.autograd.grad([(x * x).sum(), value], [x]))
            log.attempt("backward output",
                        lambda: torch.autograd.backward([(x * x).sum(), value]))
        x.grad = None
        log.attempt("grad_variables", lambda: torch.autograd.backward(
            (x * x).sum(), grad_variables=torch.tensor(5.0)))
        log("x.grad", x.grad)
        log.attempt("grad_variables and grad_tensors", lambda: torch.autograd.backward(
            x * x, grad_tensors=torch.ones(2), grad_variables=torch.ones(2)))
    differential(prog)
