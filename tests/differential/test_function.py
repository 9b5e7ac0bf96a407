"""Differential tests for custom autograd Functions: FUNC-1 to FUNC-15 (spec/function.md).

Each program defines its Function classes on the engine it is given (`torch.autograd.Function`),
so the same class body runs on torch and on refimpl. Programs vary dtypes, shapes (0-d, 1-d,
2-d), the ops inside forward and backward, and the number of outputs.
"""
import pytest

SHAPES = {"0-d": 1.5, "1-d": [1.0, -2.0, 0.5], "2-d": [[1.0, 2.0], [-0.5, 3.0]]}


def _dtypes(torch):
    return {"float32": torch.float32, "float64": torch.float64}


def _square(torch):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g
    return Square


def _twice(torch):
    """A Function that doubles its input in place and marks it dirty."""
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Twice


@pytest.mark.clause("FUNC-1")
def test_apply_records_one_node_and_backward_gives_the_gradients(differential):
    def prog(torch, log):
        modes = []

        class SinMul(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                modes.append(torch.is_grad_enabled())
                inner = x.sin() * w
                ctx.save_for_backward(x, w)
                modes.append(inner.requires_grad)
                return inner + x.exp()

            @staticmethod
            def backward(ctx, g):
                modes.append(torch.is_grad_enabled())
                x, w = ctx.saved_tensors
                return g * (x.cos() * w + x.exp()), g * x.sin()

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                x = torch.tensor(v, dtype=dt, requires_grad=True)
                w = torch.tensor(v, dtype=dt) * 0.5
                w.requires_grad_()
                y = SinMul.apply(x, w)
                label = f"{dname} {sname}"
                log(label + " y", y)
                log(label + " flags", [y.requires_grad, y.is_leaf, y.dtype == dt,
                                       len(y.grad_fn.next_functions)])
                ((y * y).sum() + x.sum()).backward()
                log(label + " grads", [x.grad, w.grad])
        log("grad modes inside", modes)
        c = torch.tensor([1.0, 2.0])
        log("no input requires grad", [SinMul.apply(c, c).requires_grad,
                                       SinMul.apply(c, c).grad_fn is None])
        with torch.no_grad():
            r = SinMul.apply(torch.tensor([1.0], requires_grad=True), c[:1])
        log("under no_grad", r.requires_grad)
    differential(prog)


@pytest.mark.clause("FUNC-1")
def test_edges_are_one_per_tensor_argument(differential):
    def prog(torch, log):
        class Affine(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, k, b, flag):
                ctx.k = k
                return a * k + b if flag else a - b

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None, g, None

        a = torch.tensor([[1.0, 2.0]], requires_grad=True)
        h = a * 2
        b = torch.tensor([[0.5, 0.5]])
        y = Affine.apply(h, 3.0, b, True)
        fns = y.grad_fn.next_functions
        log("edges", [len(fns), fns[0][0].name(), fns[1][0] is None])
        b.requires_grad_()
        y = Affine.apply(h, 3.0, b, True)
        log("edges with b", [len(y.grad_fn.next_functions),
                             y.grad_fn.next_functions[1][0].name()])
        (y.sum() + h.sum()).backward()
        log("grads", [a.grad, b.grad])
    differential(prog)


@pytest.mark.clause("FUNC-2")
def test_node_name_and_shared_node_of_several_outputs(differential):
    def prog(torch, log):
        class ThreeWay(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x.exp(), x.sum()

            @staticmethod
            def backward(ctx, g1, g2, g3):
                return g1 * 2 + g2 + g3

        x = torch.tensor([0.5, 1.0], requires_grad=True)
        p, q, r = ThreeWay.apply(x)
        log("names", [t.grad_fn.name() for t in (p, q, r)])
        log("shared", [p.grad_fn is q.grad_fn, q.grad_fn is r.grad_fn])
        log("output numbers", [(t * 1).grad_fn.next_functions[0][1] for t in (p, q, r)])
        log("square", _square(torch).apply(x).grad_fn.name())
    differential(prog)


@pytest.mark.clause("FUNC-3")
def test_setup_context_form(differential):
    def prog(torch, log):
        calls = []

        class Mul(torch.autograd.Function):
            @staticmethod
            def forward(a, b, k):
                calls.append(("forward", torch.is_grad_enabled()))
                return a * b * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                calls.append(("setup_context", torch.is_grad_enabled(), len(inputs),
                              output.requires_grad))
                a, b, k = inputs
                ctx.save_for_backward(a, b)
                ctx.k = k

            @staticmethod
            def backward(ctx, g):
                calls.append(("backward", torch.is_grad_enabled()))
                a, b = ctx.saved_tensors
                return g * b * ctx.k, g * a * ctx.k, None

        for sname, v in SHAPES.items():
            a = torch.tensor(v, requires_grad=True)
            b = torch.tensor(v, dtype=torch.float64, requires_grad=True)
            y = Mul.apply(a, b, -2.0)
            log(sname + " y", [y, str(y.dtype), y.grad_fn.name()])
            y.sum().backward()
            log(sname + " grads", [a.grad, b.grad, str(a.grad.dtype)])
        h = torch.tensor([1.0, 2.0], requires_grad=True) * 1
        y = Mul.apply(h, h, 1.0)
        h.add_(1)
        log.attempt("saved in setup_context, then written", lambda: y.sum().backward())
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("FUNC-4")
def test_saved_tensors_version_check(differential):
    def prog(torch, log):
        Square = _square(torch)

        class Exp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, c):
                r = x.exp() * c
                ctx.save_for_backward(r, c)
                return r

            @staticmethod
            def backward(ctx, g):
                r, c = ctx.saved_tensors
                return g * r, None

        for dname, dt in _dtypes(torch).items():
            x = torch.tensor([0.5, -1.0], dtype=dt, requires_grad=True)
            h = x * 1
            y = Square.apply(h)
            h.mul_(2)
            log.attempt(dname + " saved input written", lambda y=y: y.sum().backward())
            c = torch.tensor([2.0, 3.0], dtype=dt)
            e = Exp.apply(x, c)
            c.add_(1)
            log.attempt(dname + " saved constant written", lambda e=e: e.sum().backward())
            e = Exp.apply(x, torch.tensor([2.0, 3.0], dtype=dt))
            e.mul_(2)
            log.attempt(dname + " saved output written", lambda e=e: e.sum().backward())
            e = Exp.apply(x, torch.tensor([2.0, 3.0], dtype=dt))
            log.attempt(dname + " untouched", lambda e=e: (e * e).sum().backward())
            log(dname + " x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("FUNC-4")
def test_saved_tensors_are_freed_unless_retained(differential):
    def prog(torch, log):
        Square = _square(torch)

        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = torch.tensor([[1.0, -1.0]], dtype=torch.float64, requires_grad=True)
        s = Square.apply(x).sum()
        s.backward(retain_graph=True)
        log.attempt("retained", lambda: s.backward())
        log.attempt("freed", lambda: s.backward())
        d = Double.apply(x).sum()
        d.backward()
        log.attempt("nothing saved", lambda: d.backward())
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("FUNC-5")
def test_needs_input_grad(differential):
    def prog(torch, log):
        seen = []

        class Blend(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, k, b, c):
                seen.append(("forward", ctx.needs_input_grad))
                return a * k + b * c

            @staticmethod
            def backward(ctx, g):
                seen.append(("backward", ctx.needs_input_grad))
                return (g * 2 if ctx.needs_input_grad[0] else None, None,
                        g if ctx.needs_input_grad[2] else None,
                        g if ctx.needs_input_grad[3] else None)

        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0])
        c = torch.tensor([1.0, -1.0], requires_grad=True)
        for args in ((a, 2.0, b, c), (a.detach(), 2.0, b, c), (a * 1, -1.0, b, c.detach())):
            y = Blend.apply(*args)
            y.sum().backward()
        log("seen", seen)
        log("grads", [a.grad, c.grad])
    differential(prog)


@pytest.mark.clause("FUNC-6")
def test_none_gradients_and_non_tensor_arguments(differential):
    def prog(torch, log):
        class Pick(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, k):
                return a * b * k

            @staticmethod
            def backward(ctx, g):
                return None, g * ctx.needs_input_grad[1], None, None, None

        class Scaled(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, k):
                return a * k

            @staticmethod
            def backward(ctx, g):
                return g * 2, g

        for dname, dt in _dtypes(torch).items():
            a = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
            b = torch.tensor([3.0, 4.0], dtype=dt, requires_grad=True)
            Pick.apply(a, b, 2.0).sum().backward()
            log(dname + " pick", [a.grad, b.grad])
            log.attempt(dname + " grad of unused",
                        lambda a=a, b=b: torch.autograd.grad(Pick.apply(a, b, 1.0).sum(), a))
            log(dname + " allow_unused",
                torch.autograd.grad(Pick.apply(a, b, 1.0).sum(), a, allow_unused=True))
            log.attempt(dname + " non-tensor grad",
                        lambda b=b: Scaled.apply(b, 2.0).sum().backward())
            c = torch.tensor([1.0, 1.0], dtype=dt)
            Scaled.apply(b, c).sum().backward()
            log(dname + " dropped", [b.grad, c.grad])
    differential(prog)


@pytest.mark.clause("FUNC-6")
@pytest.mark.parametrize("behind", ["sin", "exp", "mul", "view"])
def test_the_nodes_behind_a_none_gradient_still_run(differential, behind):
    """Behind an argument backward returns None for, the pass still runs each node with no
    gradient: what they saved is checked and freed, tensor hooks there get None, and no leaf
    behind gets a .grad."""
    def prog(torch, log):
        class Pick(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 0 + b

            @staticmethod
            def backward(ctx, g):
                return None, g

        def made(h):
            return {"sin": lambda: h.sin(), "exp": lambda: h.exp(),
                    "mul": lambda: h * h, "view": lambda: h[:1] * 2}[behind]()

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                if behind == "view" and sname == "0-d":
                    continue
                label = f"{dname} {sname}"
                leaf = torch.tensor(v, dtype=dt, requires_grad=True)
                b = torch.tensor(v, dtype=dt, requires_grad=True)
                s = made(leaf * 1)
                got = []
                s.register_hook(lambda g, got=got: got.append(g))
                Pick.apply(s, b).sum().backward()
                log(label, [got, leaf.grad, b.grad])
                log.attempt(label + " again", lambda s=s: s.sum().backward())
                h = leaf * 1
                s2 = made(h)
                h.mul_(2)
                log.attempt(label + " written",
                            lambda s2=s2, b=b: Pick.apply(s2, b).sum().backward())
    differential(prog)


@pytest.mark.clause("FUNC-7")
def test_wrong_number_of_gradients(differential):
    def prog(torch, log):
        def function(n_returned):
            class Returns(torch.autograd.Function):
                @staticmethod
                def forward(ctx, *args):
                    return args[0] * 2

                @staticmethod
                def backward(ctx, g):
                    out = (g, g, g)[:n_returned]
                    return out[0] if n_returned == 1 else out
            return Returns

        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0], requires_grad=True)
        for n_args, args in ((1, (a,)), (2, (a, b)), (2, (a, 5.0)), (3, (a, torch.ones(2), b))):
            for n_returned in (1, 2, 3):
                label = f"{n_args} args, {n_returned} returned"
                log.attempt(label, lambda args=args, n=n_returned:
                            function(n).apply(*args).sum().backward())
        log("grads", [a.grad, b.grad])
    differential(prog)


@pytest.mark.clause("FUNC-8")
def test_gradient_shapes_are_summed_cast_or_refused(differential):
    def prog(torch, log):
        def returning(shape, dtype):
            class Fixed(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return torch.ones(shape, dtype=dtype)
            return Fixed

        for sname, v in SHAPES.items():
            for shape in ((), (2,), (3,), (4, 2, 2), (2, 1)):
                for dname, dt in _dtypes(torch).items():
                    x = torch.tensor(v, requires_grad=True)
                    label = f"{sname} <- {shape} {dname}"
                    log.attempt(label, lambda x=x, s=shape, d=dt:
                                returning(s, d).apply(x).sum().backward())
                    log(label + " grad", [x.grad, None if x.grad is None else str(x.grad.dtype)])
    differential(prog)


@pytest.mark.clause("FUNC-9")
def test_several_outputs_get_materialized_gradients(differential):
    def prog(torch, log):
        got = []

        class Parts(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.sum(), x * 2, "label", x.double() * 3

            @staticmethod
            def backward(ctx, gs, gd, gl, g3):
                got.append([gs, gd, gl, g3, str(g3.dtype)])
                return gs + 2 * gd + 3 * g3

        for sname, v in SHAPES.items():
            x = torch.tensor(v, requires_grad=True)
            s, d, lab, t = Parts.apply(x)
            log(sname + " outputs", [s, d, lab, t, str(t.dtype)])
            s.backward()
            (d * t).sum().backward()
            t.sum().backward()
            log(sname + " x.grad", x.grad)
        log("got", got)
    differential(prog)


@pytest.mark.clause("FUNC-9")
def test_an_undefined_gradient_reaches_backward_as_zeros(differential):
    def prog(torch, log):
        got = []

        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                got.append(g)
                return g * 2

        class Block(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def backward(ctx, g):
                return None

        for dname, dt in _dtypes(torch).items():
            x = torch.tensor([[1.0], [2.0]], dtype=dt, requires_grad=True)
            y = Double.apply(x)
            Block.apply(y).sum().backward()
            log(dname + " only undefined", x.grad)
            (Block.apply(Double.apply(x)).sum() + (x * 3).sum()).backward()
            log(dname + " with another path", x.grad)
        log("got", got)
    differential(prog)


@pytest.mark.clause("FUNC-10")
def test_set_materialize_grads_false_passes_none(differential):
    def prog(torch, log):
        got = []

        class Parts(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, materialize):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                got.append([g1, g2])
                total = 0
                if g1 is not None:
                    total = total + 2 * g1
                if g2 is not None:
                    total = total + 3 * g2
                return total, None

        for materialize in (False, True):
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            p, q = Parts.apply(x, materialize)
            q.sum().backward()
            p, q = Parts.apply(x, materialize)
            p.sum().backward()
            log(f"materialize={materialize}", x.grad)
        log("got", got)
    differential(prog)


@pytest.mark.clause("FUNC-11")
def test_mark_dirty_makes_the_function_the_history(differential):
    def prog(torch, log):
        class AddScaled(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, other):
                x.add_(other * 2)
                x.mul_(1.5)
                ctx.mark_dirty(x)
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 1.5, g * 3

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                leaf = torch.tensor(v, dtype=dt, requires_grad=True)
                o = torch.tensor(v, dtype=dt, requires_grad=True)
                h = leaf * 1
                s = h.sin()                # saves h
                y = AddScaled.apply(h, o)
                label = f"{dname} {sname}"
                log(label, [y is h, h._version, h.grad_fn.name(), h])
                log.attempt(label + " sin saved h", lambda s=s: s.sum().backward())
                h.sum().backward()
                log(label + " grads", [leaf.grad, o.grad])
        base = torch.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
        AddScaled.apply(base[1:], torch.tensor(1.0))
        log("through a view", [base.grad_fn.name(), base._version, base])
        c = torch.tensor([1.0, 2.0])
        log("not recorded", [AddScaled.apply(c, torch.tensor(1.0)) is c, c._version,
                             c.grad_fn is None, c])
    differential(prog)


@pytest.mark.clause("FUNC-11")
@pytest.mark.parametrize("index", ["[:2]", "[1]", "[1:]"])
def test_a_dirty_view_whose_backward_gives_none_leaves_the_base_without_gradient(
        differential, index):
    """Through a view the Function's node sits inside the base's CopySlices: when its backward
    returns None for the view, the base gets no gradient at all, not zeros in the view's part
    and the incoming gradient elsewhere; the Function's other inputs get theirs."""
    def prog(torch, log):
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, w):
                a.mul_(w)
                ctx.mark_dirty(a)
                return a

            @staticmethod
            def backward(ctx, g):
                return None, (g * 0 + 1).sum()

        for dname, dt in _dtypes(torch).items():
            x = torch.tensor([1.0, 2.0, 3.0], dtype=dt, requires_grad=True)
            w = torch.tensor(5.0, dtype=dt, requires_grad=True)
            b = x.clone()
            v = b[:2] if index == "[:2]" else b[1] if index == "[1]" else b[1:]
            Scale.apply(v, w)
            (b * torch.tensor([1.0, 10.0, 100.0], dtype=dt)).sum().backward(retain_graph=True)
            log(f"{dname} grads", [x.grad, w.grad])
            got = torch.autograd.grad(b.sum(), [x, w], create_graph=True, allow_unused=True)
            log(f"{dname} create_graph", list(got))
    differential(prog)


@pytest.mark.clause("FUNC-11")
def test_mark_dirty_errors(differential):
    def prog(torch, log):
        class Hidden(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x * 3

            @staticmethod
            def backward(ctx, g):
                return g * 6

        class AddOne(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        h = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True) * 1
        log.attempt("not returned", lambda: Hidden.apply(h))
        log.attempt("leaf", lambda: AddOne.apply(torch.tensor([0.5], requires_grad=True)))
        with torch.no_grad():
            leaf = torch.tensor([0.5], requires_grad=True)
            log.attempt("leaf under no_grad", lambda: AddOne.apply(leaf))
        log("leaf after", [leaf, leaf.grad_fn is None])
    differential(prog)


@pytest.mark.clause("FUNC-11")
@pytest.mark.parametrize("what", ["leaf", "non-leaf", "view of a non-leaf"])
def test_a_dirty_input_that_requires_grad_under_no_grad_comes_back_detached(differential, what):
    """With grad mode off nothing is recorded, and a dirty input that requires grad comes back
    as detach() returns it: a new object, sharing memory and version counter, not requiring
    grad; the input keeps its flags and sees later writes through it."""
    def prog(torch, log):
        Twice = _twice(torch)
        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                if what == "view of a non-leaf" and sname == "0-d":
                    continue
                leaf = torch.tensor(v, dtype=dt, requires_grad=True)
                x = leaf if what == "leaf" else leaf * 1
                t = x[:1] if what == "view of a non-leaf" else x
                with torch.no_grad():
                    z = Twice.apply(t)
                label = f"{dname} {sname}"
                log(label, [z is t, z.requires_grad, t.requires_grad, t.is_leaf, t._version,
                            z._version, z.grad_fn is None])
                z.add_(1)
                log(label + " after a write through it", [t, t._version, leaf])
    differential(prog)


@pytest.mark.clause("FUNC-11")
@pytest.mark.parametrize("retained", ["retained non-leaf", "view of a retained non-leaf"])
def test_a_recorded_dirty_input_loses_its_grad_and_keeps_its_hooks(differential, retained):
    """A recorded call sets the dirty tensor's .grad to None; its hooks and retains_grad stay,
    and the next pass gives it a fresh .grad. Through a view, the base keeps its .grad. With
    grad mode off the .grad stays."""
    def prog(torch, log):
        Twice = _twice(torch)
        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                if sname == "0-d" and retained.startswith("view"):
                    continue
                label = f"{dname} {sname}"
                leaf = torch.tensor(v, dtype=dt, requires_grad=True)
                h = leaf.sin()
                h.retain_grad()
                calls = []
                h.register_hook(lambda g, calls=calls: calls.append(g.sum()))
                (h * 3).sum().backward(retain_graph=True)
                target = h[:1] if retained.startswith("view") else h
                Twice.apply(target)
                log(label, [h.grad, h.retains_grad, len(calls)])
                (h * 5).sum().backward()
                log(label + " next pass", [h.grad, calls, leaf.grad])
                k = leaf.cos()
                k.retain_grad()
                k.sum().backward()
                with torch.no_grad():
                    Twice.apply(k)
                log(label + " under no_grad", k.grad)
    differential(prog)


@pytest.mark.clause("FUNC-12")
def test_mark_non_differentiable(differential):
    def prog(torch, log):
        got = []

        class WithMask(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                mask = x * 0 + 1
                ctx.mark_non_differentiable(mask)
                return x * 2, mask

            @staticmethod
            def backward(ctx, g, gmask):
                got.append(gmask)
                return g * 2

        class OnlyMask(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                r = x * 0
                ctx.mark_non_differentiable(r)
                return r

            @staticmethod
            def backward(ctx, g):
                return g

        for dname, dt in _dtypes(torch).items():
            x = torch.tensor([1.0, -2.0], dtype=dt, requires_grad=True)
            v, m = WithMask.apply(x)
            log(dname, [v.requires_grad, m.requires_grad, m.grad_fn is None, m.is_leaf])
            (v + m).sum().backward()
            log(dname + " x.grad", x.grad)
            log.attempt(dname + " from the mask", lambda m=m: m.sum().backward())
            r = OnlyMask.apply(x)
            log(dname + " sole output", [r.requires_grad, r.grad_fn is None])
        log("got", got)
    differential(prog)


@pytest.mark.clause("FUNC-13")
def test_once_differentiable(differential):
    def prog(torch, log):
        modes = []

        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, g):
                x, = ctx.saved_tensors
                modes.append(torch.is_grad_enabled())
                return 3 * x * x * g

        for dname, dt in _dtypes(torch).items():
            x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
            g, = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
            log(dname + " seed", [g, g.requires_grad])
            y = Cube.apply(x)
            g, = torch.autograd.grad((y * y).sum(), x, create_graph=True)
            log(dname + " nested", [g, g.requires_grad])
            log.attempt(dname + " again", lambda g=g: g.sum().backward())
            v = torch.tensor([1.0, -1.0], dtype=dt, requires_grad=True)
            g, = torch.autograd.grad(Cube.apply(x), x, grad_outputs=v, create_graph=True)
            log(dname + " grad_outputs", [g, g.requires_grad])
            Cube.apply(x).sum().backward()
            log(dname + " plain", x.grad)
        log("modes", modes)
    differential(prog)


@pytest.mark.clause("FUNC-13")
def test_backward_without_the_decorator_is_recorded_under_create_graph(differential):
    def prog(torch, log):
        modes = []

        class SinCube(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                r = x.sin() * x * x
                ctx.save_for_backward(x, r)
                return r

            @staticmethod
            def backward(ctx, g):
                x, r = ctx.saved_tensors
                modes.append(torch.is_grad_enabled())
                return g * (x.cos() * x * x + 2 * x * x.sin())

        for dname, dt in _dtypes(torch).items():
            x = torch.tensor([0.5, -1.5], dtype=dt, requires_grad=True)
            g, = torch.autograd.grad(SinCube.apply(x).sum(), x, create_graph=True)
            log(dname + " g", [g, g.requires_grad])
            log(dname + " second", torch.autograd.grad(g.sum(), x))
            SinCube.apply(x).sum().backward()
            log(dname + " plain", x.grad)
        log("modes", modes)
    differential(prog)


@pytest.mark.clause("FUNC-14")
def test_an_input_returned_as_it_is(differential):
    def prog(torch, log):
        class Same(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x, y * 2

            @staticmethod
            def backward(ctx, gx, gy):
                return gx * 3, gy * 2

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                x = torch.tensor(v, dtype=dt, requires_grad=True)
                y = torch.tensor(v, dtype=dt, requires_grad=True)
                a, b = Same.apply(x, y)
                log(label, [a is x, a.is_leaf, a.grad_fn.name(), a._version])
                (a * b).sum().backward()
                log(label + " grads", [x.grad, y.grad])
                log.attempt(label + " write the result", lambda a=a: a.mul_(2))
                x.detach().add_(1)
                log(label + " after the input's write", [a, a._version])
                log.attempt(label + " grad_fn", lambda a=a: a.grad_fn)
                log.attempt(label + " backward", lambda a=a: a.sum().backward())
        c = torch.tensor([1.0, 2.0])
        d, _ = Same.apply(c, c)
        d.add_(1)
        log("not recorded", [d is c, c, c._version, d.requires_grad])
    differential(prog)


@pytest.mark.clause("FUNC-14")
@pytest.mark.parametrize("mode", ["no_grad", "inputs need no grad"])
def test_an_input_returned_unrecorded_is_detached_or_a_view(differential, mode):
    """Unrecorded, an input returned as it is comes back as detach() gives it when it requires
    grad (no view, no grad), as a view of it when it does not; both share its memory and version
    counter."""
    def prog(torch, log):
        class Same(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                for rg in (True, False):
                    if mode == "inputs need no grad" and rg:
                        continue
                    x = torch.tensor(v, dtype=dt, requires_grad=rg)
                    if mode == "no_grad":
                        with torch.no_grad():
                            y = Same.apply(x)
                    else:
                        y = Same.apply(x)
                    log(f"{label} rg={rg}", [y is x, y.requires_grad, y._base is x,
                                              y._base is None, y.grad_fn is None])
                    y.mul_(3)
                    log(f"{label} rg={rg} written", [x, x._version, y._version])
    differential(prog)


@pytest.mark.clause("FUNC-15")
def test_calling_a_function_object_is_the_legacy_error(differential):
    def prog(torch, log):
        class OldStyle(torch.autograd.Function):
            def forward(self, x):
                return x * 2

            def backward(self, g):
                return g * 2

        class NewStyle(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = torch.tensor([1.0, 2.0], requires_grad=True)
        for cls in (OldStyle, NewStyle):
            f = log.attempt(cls.__name__ + " instance", cls)
            log.attempt(cls.__name__ + " call", lambda f=f: f(x))
            log.attempt(cls.__name__ + " call, no grad", lambda f=f: f(torch.ones(2)))
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("UNSPEC-11")
def test_around_what_a_custom_function_leaves_open(differential):
    """Only the specified parts are logged: the saved tensors' values (not their identity), the
    error of a dirty leaf (not what the leaf holds after), the results of a once_differentiable
    backward (not their node)."""
    def prog(torch, log):
        class Keep(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                log("saved value", x)
                return 2 * x * g

        class AddOne(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, g):
                return g * 1

        x = torch.tensor([1.0, -2.0], requires_grad=True)
        Keep.apply(x).sum().backward()
        log("x.grad", x.grad)
        leaf = torch.tensor([0.5], requires_grad=True)
        log.attempt("dirty leaf", lambda: AddOne.apply(leaf))
        h = torch.tensor([0.5], requires_grad=True)
        y = AddOne.apply(h * 1)
        g, = torch.autograd.grad((y * y).sum(), h, create_graph=True)
        log("once", [g, g.requires_grad])
        log.attempt("differentiated again", lambda: g.sum().backward())
    differential(prog)


@pytest.mark.clause("FUNC-6")
@pytest.mark.parametrize("value", ["float", "int", "list", "bool"])
@pytest.mark.parametrize("rg", [True, False])
def test_a_value_that_is_no_tensor_for_a_tensor_argument_raises(differential, value, rg):
    """FUNCTION_GRAD_NOT_TENSOR: backward's value for a tensor argument is a tensor or None,
    whether or not that argument requires grad; nothing is accumulated."""
    returned = {"float": 1.0, "int": 2, "list": [1.0, 1.0], "bool": True}[value]

    def prog(torch, log):
        class Number(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, w):
                return a * w

            @staticmethod
            def backward(ctx, g):
                return g, returned

        for dname, dt in _dtypes(torch).items():
            a = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
            w = torch.tensor([3.0, 4.0], dtype=dt, requires_grad=rg)
            log.attempt(dname + " backward", lambda a=a, w=w: Number.apply(a, w).sum().backward())
            log(dname + " grads", [a.grad, w.grad])
    differential(prog)


def _identity(torch):
    class Identity(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g
    return Identity


# a dirty tensor an in-place op would be refused on, and the error torch 2.13 raises for it
_REFUSED_DIRTY = {
    "narrow of a leaf": (lambda torch, leaf, nl: leaf.narrow(0, 0, 1), "VIEW_OF_LEAF_INPLACE"),
    "select of a leaf": (lambda torch, leaf, nl: leaf.select(0, 1), "VIEW_OF_LEAF_INPLACE"),
    "getitem of a leaf": (lambda torch, leaf, nl: leaf[1:], "VIEW_OF_LEAF_INPLACE"),
    "a view of a view of a leaf": (lambda torch, leaf, nl: leaf.view(-1)[1:],
                                   "VIEW_OF_LEAF_INPLACE"),
    "split output": (lambda torch, leaf, nl: nl.split(1)[0], "CUSTOM_VIEW_INPLACE"),
    "unbind output": (lambda torch, leaf, nl: nl.unbind()[1], "CUSTOM_VIEW_INPLACE"),
    "a view of a chunk output": (lambda torch, leaf, nl: nl.chunk(2)[0].view(-1),
                                 "CUSTOM_VIEW_INPLACE"),
    "Identity output": (lambda torch, leaf, nl: _identity(torch).apply(nl),
                        "CUSTOM_VIEW_INPLACE"),
    "a no_grad view of a non-leaf": (lambda torch, leaf, nl: _no_grad_view(torch, nl),
                                     "DIRTY_LEAF"),
    "a view of a no_grad view": (lambda torch, leaf, nl: _no_grad_view(torch, nl)[:1],
                                 "NO_GRAD_VIEW_INPLACE"),
    "a view of an inference-mode view": (
        lambda torch, leaf, nl: _inference_view(torch, nl).view(-1), "INFERENCE_VIEW_INPLACE"),
}


def _inference_view(torch, t):
    with torch.inference_mode():
        return t.narrow(0, 0, 1)


def _no_grad_view(torch, t):
    with torch.no_grad():
        return t.narrow(0, 0, 1)


@pytest.mark.clause("FUNC-11")
@pytest.mark.parametrize("target", list(_REFUSED_DIRTY))
def test_a_dirty_tensor_an_in_place_op_is_refused_on_is_refused(differential, target):
    """With grad mode on, a dirty tensor is checked as an in-place op's target is, after
    forward wrote it: a view of a leaf that requires grad raises VIEW_OF_LEAF_INPLACE, an
    output of a multi-output view or of a Function that returned its input (or a view of one)
    CUSTOM_VIEW_INPLACE, a view of a view made under no_grad or in inference mode
    NO_GRAD_VIEW_INPLACE or INFERENCE_VIEW_INPLACE, and a view made under no_grad of a tensor
    that requires grad, a leaf (MODE-9), DIRTY_LEAF. With grad mode off each is written.
    (What a refused one holds after and its version are open, UNSPEC-11: not logged.)"""
    make, error = _REFUSED_DIRTY[target]

    def prog(torch, log):
        Twice = _twice(torch)
        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                if sname == "0-d":
                    continue            # (nothing to narrow, split or unbind)
                label = f"{dname} {sname}"
                leaf = torch.tensor(v, dtype=dt, requires_grad=True)
                t = make(torch, leaf, torch.tensor(v, dtype=dt, requires_grad=True) * 2)
                log.attempt(label, lambda t=t: Twice.apply(t))
                leaf = torch.tensor(v, dtype=dt, requires_grad=True)
                t = make(torch, leaf, torch.tensor(v, dtype=dt, requires_grad=True) * 2)
                with torch.no_grad():
                    log.attempt(label + " under no_grad", lambda t=t: Twice.apply(t))
                log(label + " written under no_grad", [t, t._version])
    entries = dict(differential(prog).entries)      # torch's, which refimpl's matched
    recorded = [k for k in entries if k.endswith("-d")]
    assert len(recorded) == 4 and all(entries[k] == ("raises", error) for k in recorded)
    assert all(entries[k + " under no_grad"] == "ok" for k in recorded)


@pytest.mark.clause("FUNC-11")
@pytest.mark.parametrize("target", ["a view of a non-leaf", "a view of a leaf", "split output"])
def test_a_dirty_view_in_a_function_of_two_outputs_is_refused(differential, target):
    """A dirty view in a Function that returns more than one tensor raises DIRTY_VIEW_OUTPUTS,
    before the checks of the view itself; a dirty tensor that is no view may be one of
    several outputs."""
    def prog(torch, log):
        class Two(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2 + g2 * 6

        for dname, dt in _dtypes(torch).items():
            leaf = torch.tensor([1.0, 2.0, 3.0], dtype=dt, requires_grad=True)
            v = (leaf[1:] if target == "a view of a leaf" else
                 (leaf * 1).split(2)[0] if target == "split output" else (leaf * 1)[1:])
            log.attempt(f"{dname} view", lambda v=v: Two.apply(v))
            h = leaf * 1
            a, b = Two.apply(h)
            (a + b).sum().backward()
            log(f"{dname} no view", [a is h, h._version, leaf.grad])
    entries = dict(differential(prog).entries)
    assert [entries[f"{d} view"] for d in ("float32", "float64")] == [
        ("raises", "DIRTY_VIEW_OUTPUTS")] * 2


def _modes(torch, mode):
    """The grad mode apply runs under for `mode`, and whether the dirty input requires grad:
    recorded, not recorded as no input requires grad, or under no_grad."""
    return (torch.no_grad() if mode == "no_grad" else torch.enable_grad(),
            mode != "no input requires grad")


@pytest.mark.clause("FUNC-11")
@pytest.mark.parametrize("returns", ["once", "twice", "twice among others"])
@pytest.mark.parametrize("mode", ["recorded", "no input requires grad", "no_grad"])
def test_a_dirty_tensor_is_bumped_once_however_often_it_is_returned(differential, returns,
                                                                    mode):
    """A tensor given to mark_dirty once is one version higher than forward left it, whether
    forward returns it once or more often (refimpl bumped it once per place); the gradient
    does not depend on which place is its output number (UNSPEC-11)."""
    def prog(torch, log):
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                x.mul_(2)
                ctx.mark_dirty(x)
                return {"once": x, "twice": (x, x), "twice among others": (x, y * 3, x)}[returns]

            @staticmethod
            def backward(ctx, *g):
                return (g[0] + g[-1]) * 2 if len(g) > 1 else g[0] * 2, None

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                mode_ctx, rg = _modes(torch, mode)
                leaf = torch.tensor(v, dtype=dt, requires_grad=rg)
                h = leaf * 1
                y = torch.tensor(v, dtype=dt) * 1
                with mode_ctx:
                    out = Scale.apply(h, y)
                outs = out if isinstance(out, tuple) else (out,)
                log(label, [h._version, y._version, h, [o is h for o in outs],
                            [o._version for o in outs]])
                if mode == "recorded":
                    (h * h).sum().backward()
                    log(label + " grad", leaf.grad)
    differential(prog)


@pytest.mark.clause("UNSPEC-11")
@pytest.mark.parametrize("mode", ["recorded", "no input requires grad", "no_grad"])
def test_what_torch_2_13_does_with_a_tensor_marked_dirty_twice_or_not_returned(differential,
                                                                                mode):
    """What UNSPEC-11 leaves open, as torch 2.13 does it and refimpl does too (so that its
    parentheses are checked): mark_dirty bumps each tensor it was given, once per time given,
    before apply checks that each is returned (a tensor not returned is bumped too); a dirty
    tensor returned twice is the node's output at its last place (the gradient through it
    reaches backward there, zeros at the other)."""
    def prog(torch, log):
        class Marked(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, how):
                x.mul_(2)
                y.add_(1)
                ctx.mark_dirty(*{"x twice": (x, x), "x and y": (x, y), "y": (y,)}[how])
                return x, y * 1

            @staticmethod
            def backward(ctx, gx, gy):
                return gx * 2, None, None

        class Again(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x * 5, x, x

            @staticmethod
            def backward(ctx, g0, g1, g2):
                got.append([g0, g1, g2])
                return g0 * 10 + g1 * 2 + g2 * 3

        got = []
        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                mode_ctx, rg = _modes(torch, mode)
                for how in ("x twice", "x and y", "y"):
                    h = torch.tensor(v, dtype=dt, requires_grad=rg) * 1
                    y = torch.tensor(v, dtype=dt) * 1
                    with mode_ctx:
                        log.attempt(f"{label} {how}", lambda h=h, y=y, how=how:
                                    Marked.apply(h, y, how))
                    log(f"{label} {how} versions", [h._version, y._version])
                if mode == "recorded":
                    leaf = torch.tensor(v, dtype=dt, requires_grad=True)
                    h = leaf * 1
                    Again.apply(h)
                    log(label + " output number", (h * 1).grad_fn.next_functions[0][1])
                    (h * 7).sum().backward()
                    log(label + " grads", [leaf.grad, got])
                    got.clear()
    entries = dict(differential(prog).entries)
    assert entries["float32 1-d x twice versions"] == [3, 1]
    assert entries["float32 1-d y"] == ("raises", "DIRTY_NOT_RETURNED")
    assert entries["float32 1-d y versions"] == [1, 2]


@pytest.mark.clause("FUNC-1")
@pytest.mark.parametrize("view", ["[:1]", "view(-1)", "[0]"])
@pytest.mark.parametrize("first", [False, True])
def test_a_view_of_a_dirty_input_returned_beside_it_gets_the_node(differential, view, first):
    """A view of a dirty input that forward made and returns beside the input is recorded as
    any result is: the Function's node, at its own output number, and a pass through it calls
    backward; the bump of the dirty input does not make it stale (refimpl raised
    CUSTOM_VIEW_BASE_INPLACE reading its grad_fn)."""
    def prog(torch, log):
        got = []

        class WithView(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                w = x[:1] if view == "[:1]" else x.view(-1) if view == "view(-1)" else x[0]
                return (w, x) if first else (x, w)

            @staticmethod
            def backward(ctx, g1, g2):
                got.append([g1, g2])
                gx, gw = (g2, g1) if first else (g1, g2)
                return gx * 2 + gw.sum() * 10

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                if sname == "0-d" and view != "view(-1)":
                    continue            # (nothing to slice or select)
                label = f"{dname} {sname}"
                leaf = torch.tensor(v, dtype=dt, requires_grad=True)
                h = leaf * 1
                out = WithView.apply(h)
                w = out[0] if first else out[1]
                log(label, [w.grad_fn.name(), w.requires_grad, w.is_leaf, w._version,
                            (w * 1).grad_fn.next_functions[0][1], w])
                (w * 3).sum().backward()
                log(label + " grads", [leaf.grad, got])
                got.clear()
    differential(prog)


# results forward makes that require grad but are no views: made under enable_grad, a tensor
# from outside forward, a new leaf; and views, which UNSPEC-11 leaves open where they get no node
_MADE = {
    "enable_grad product": lambda torch, x, outer: _under_enable_grad(torch, lambda: x * 2),
    "tensor from outside": lambda torch, x, outer: outer,
    "new leaf": lambda torch, x, outer: torch.ones(2, dtype=x.dtype, requires_grad=True),
    "product": lambda torch, x, outer: x * 2,
    "view of the input": lambda torch, x, outer: x.view(-1),
    "enable_grad view": lambda torch, x, outer: _under_enable_grad(torch, lambda: x.view(-1)),
    "view from outside": lambda torch, x, outer: outer.view(-1),
}


def _under_enable_grad(torch, fn):
    with torch.enable_grad():
        return fn()


@pytest.mark.clause("FUNC-12")
@pytest.mark.parametrize("made", list(_MADE))
@pytest.mark.parametrize("mode", ["marked", "no_grad", "no input requires grad", "recorded"])
def test_a_result_without_the_node_requires_no_grad_unless_a_view(differential, made, mode):
    """A result that gets no node (marked non-differentiable, FUNC-12; grad mode off or no
    input requiring grad, FUNC-1) and is no view does not require grad and has no grad_fn,
    one forward made requiring grad too (refimpl returned those as forward made them), and a
    backward from a marked one raises NO_GRAD_FN; backward gets zeros for a marked output. A
    view's flags are open there (UNSPEC-11): only its value is logged. Recorded, every result
    has the node, views too."""
    is_view = "view" in made

    def prog(torch, log):
        got, outer = [], []

        class Make(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                r = _MADE[made](torch, x, outer[0])     # outer: not an argument
                if mode == "marked":
                    ctx.mark_non_differentiable(r)
                return x * 3, r

            @staticmethod
            def backward(ctx, g, gr):
                got.append(gr)
                return g * 3

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                x = torch.tensor(v, dtype=dt, requires_grad=mode != "no input requires grad")
                outer[:] = [torch.tensor(v, dtype=dt, requires_grad=True) * 2]
                with torch.no_grad() if mode == "no_grad" else torch.enable_grad():
                    a, r = Make.apply(x)
                if mode == "recorded":
                    log(label, [r.grad_fn.name(), r.requires_grad, r.is_leaf, r])
                elif is_view:
                    log(label, r)
                else:
                    log(label, [r.requires_grad, r.grad_fn is None, r.is_leaf, r])
                if mode == "marked" and not is_view:
                    log.attempt(label + " backward from it", lambda r=r: r.sum().backward())
                if mode in ("marked", "recorded"):
                    a.sum().backward()
                    log(label + " backward got", [got, x.grad])
                    got.clear()
    differential(prog)


@pytest.mark.clause("UNSPEC-11")
@pytest.mark.parametrize("mode", ["marked", "no_grad", "no input requires grad"])
def test_what_torch_2_13_does_with_a_result_that_gets_no_node(differential, mode):
    """What UNSPEC-11 leaves open, as torch 2.13 does it and refimpl does too (so that its
    parentheses are checked): a view forward made is returned as it was made (a view under
    no_grad of a tensor that requires grad requires grad and is a leaf, one under enable_grad
    has the view op's node; one of a dirty input, bumped after it was made, raises
    NO_GRAD_VIEW_BASE_INPLACE when its grad_fn is read); a tensor from outside forward that
    requires grad is detached in place, and returned itself."""
    def prog(torch, log):
        outer = []

        class Make(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, made):
                r = _MADE[made](torch, x, outer[0])
                if mode == "marked":
                    ctx.mark_non_differentiable(r)
                return x * 3, r

            @staticmethod
            def backward(ctx, g, gr):
                return g * 3, None

        class DirtyView(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x, x.view(-1)

            @staticmethod
            def backward(ctx, g, gv):
                return g * 2

        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                rg = mode != "no input requires grad"
                x = torch.tensor(v, dtype=dt, requires_grad=rg)
                for made in ("view of the input", "enable_grad view", "view from outside",
                             "tensor from outside"):
                    outer[:] = [torch.tensor(v, dtype=dt, requires_grad=True) * 2]
                    with torch.no_grad() if mode == "no_grad" else torch.enable_grad():
                        _, r = Make.apply(x, made)
                    fn = r.grad_fn
                    log(f"{label} {made}", [r.requires_grad, r.is_leaf,
                                            fn.name() if fn is not None else None,
                                            r is outer[0], outer[0].requires_grad])
                if mode == "no_grad":
                    h = torch.tensor(v, dtype=dt, requires_grad=True) * 1
                    with torch.no_grad():
                        _, w = DirtyView.apply(h)
                    log.attempt(label + " view of a dirty input", lambda w=w: w.grad_fn)
    entries = dict(differential(prog).entries)
    if mode == "no_grad":
        assert entries["float32 1-d view of the input"] == [True, True, None, False, True]
        assert entries["float32 1-d enable_grad view"][:3] == [True, False, "ViewBackward0"]
        assert entries["float32 1-d view of a dirty input"] == (
            "raises", "NO_GRAD_VIEW_BASE_INPLACE")
    assert entries["float32 1-d tensor from outside"] == [False, True, None, True, False]


def _saving(torch, save, read, calls):
    """A Function doubling x whose forward (or setup_context) saves `save` and whose backward
    reads ctx.saved_tensors as `read` says, counting its calls in `calls`."""
    def keep(ctx, x, y):
        kept = {"input": (x,), "output": (y,), "None": (None,), "an empty call": (),
                "nothing": None}[save]
        if kept is not None:
            ctx.save_for_backward(*kept)

    def backward(ctx, g):
        calls.append(1)
        if read == "always" or (read == "in later passes" and len(calls) > 1):
            _ = ctx.saved_tensors
        return g * 2

    class Saving(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            keep(ctx, x, y)
            return y

    class SavingLater(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            keep(ctx, inputs[0], output)

    for cls in (Saving, SavingLater):
        cls.backward = staticmethod(backward)
    return Saving, SavingLater


@pytest.mark.clause("FUNC-4")
@pytest.mark.parametrize("save", ["input", "output", "None", "an empty call", "nothing"])
@pytest.mark.parametrize("read", ["always", "never", "in later passes"])
def test_a_freed_function_node_raises_where_backward_reads_its_saved_tensors(differential,
                                                                            save, read):
    """A pass without retain_graph frees a custom Function's node whatever it saved; a later
    pass raises GRAPH_FREED exactly when backward reads ctx.saved_tensors (refimpl freed only
    a node that had saved a tensor, so a read after saving nothing or None did not raise)."""
    def prog(torch, log):
        calls = []
        for form in _saving(torch, save, read, calls):
            for dname, dt in _dtypes(torch).items():
                for sname, v in SHAPES.items():
                    for how in ("backward", "grad"):
                        label = f"{form.__name__} {dname} {sname} {how}"
                        x = torch.tensor(v, dtype=dt, requires_grad=True)
                        s = form.apply(x).sum()
                        step = (lambda s=s: s.backward()) if how == "backward" else (
                            lambda s=s, x=x: torch.autograd.grad(s, x))
                        calls.clear()
                        for i in range(3):
                            log.attempt(f"{label} pass {i}", step)
                        log(label, [x.grad, len(calls)])
    entries = dict(differential(prog).entries)
    later = entries["Saving float64 1-d backward pass 1"]
    assert later == ("ok" if read == "never" else ("raises", "GRAPH_FREED"))


@pytest.mark.clause("SAVED-7")
@pytest.mark.parametrize("read", [True, False])
def test_a_function_node_shared_or_hooked_is_found_freed_only_by_a_read(differential, read):
    """The same through a node two outputs share (FREE-5) and for what saved-tensor hooks
    packed (SAVED-7): the second pass raises GRAPH_FREED without calling unpack where backward
    reads ctx.saved_tensors, and runs where it does not."""
    def prog(torch, log):
        calls = []
        Saving, _ = _saving(torch, "input", "always" if read else "never", [])
        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                x = torch.tensor(v, dtype=dt, requires_grad=True)
                with torch.autograd.graph.saved_tensors_hooks(
                        lambda t: (calls.append("pack"), t)[1],
                        lambda t: (calls.append("unpack"), t)[1]):
                    y = Saving.apply(x)
                log.attempt(label + " first", lambda y=y: y.sum().backward())
                log.attempt(label + " second", lambda y=y: (y + 1).sum().backward())
                log(label, [x.grad, calls])
                calls.clear()
    differential(prog)


def _with_defaults(torch, seen):
    """Functions with setup_context whose forward has defaults: a number k and a tensor y."""
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(x, k=3.0, y=None):
            return x * k if y is None else x * k * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append([len(inputs), inputs[1], inputs[2] is None, ctx.needs_input_grad])
            ctx.save_for_backward(*inputs[::2])
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            seen.append(ctx.needs_input_grad)
            if y is None:
                return g * ctx.k, None, None
            return g * ctx.k * y, None, g * ctx.k * x

    class Short(torch.autograd.Function):
        @staticmethod
        def forward(x, k=3.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(len(inputs))

        @staticmethod
        def backward(ctx, g):
            return g * 3
    return Scale, Short


_BOUND_CALLS = {
    "apply(x)": lambda F, x, t: F.apply(x),
    "apply(x, 2.0)": lambda F, x, t: F.apply(x, 2.0),
    "apply(x, k=2.0)": lambda F, x, t: F.apply(x, k=2.0),
    "apply(x=x)": lambda F, x, t: F.apply(x=x),
    "apply(k=0.5, x=x)": lambda F, x, t: F.apply(k=0.5, x=x),
    "apply(x, y=t)": lambda F, x, t: F.apply(x, y=t),
    "apply(x, 2.0, t)": lambda F, x, t: F.apply(x, 2.0, t),
}


@pytest.mark.clause("FUNC-3")
@pytest.mark.parametrize("call", list(_BOUND_CALLS))
def test_setup_context_binds_the_arguments_to_forward_with_its_defaults(differential, call):
    """With setup_context, apply binds its arguments to forward's parameters, keywords and
    defaults too: inputs, needs_input_grad, the edges and the gradients backward must return
    are those of the bound arguments (refimpl took apply's positional arguments only, and
    refused keywords with TypeError)."""
    def prog(torch, log):
        seen = []
        Scale, Short = _with_defaults(torch, seen)
        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                x = torch.tensor(v, dtype=dt, requires_grad=True)
                t = torch.tensor(v, dtype=dt, requires_grad=True) * 0.5
                out = _BOUND_CALLS[call](Scale, x, t)
                log(label, [out, len(out.grad_fn.next_functions)])
                out.sum().backward()
                log(label + " grads", [x.grad, seen])
                seen.clear()
                log.attempt(label + " one gradient for two",
                            lambda x=x: Short.apply(x).sum().backward())
                with torch.no_grad():
                    log(label + " no_grad", [_BOUND_CALLS[call](Scale, x, t), seen])
                seen.clear()
    differential(prog)


@pytest.mark.clause("UNSPEC-11")
def test_what_torch_2_13_does_with_arguments_that_do_not_bind(differential):
    """What UNSPEC-11 leaves open, as torch 2.13 does it and refimpl does too: arguments that
    do not bind to forward's parameters, a forward with keyword-only parameters (with
    setup_context), and keyword arguments to a Function without setup_context raise
    TypeError."""
    def prog(torch, log):
        Scale, _ = _with_defaults(torch, [])

        class KeywordOnly(torch.autograd.Function):
            @staticmethod
            def forward(x, *, k=3.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * 3

        class WithCtx(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, k=3.0, y=None):
                ctx.k = k
                return x * k if y is None else x * k * y

            @staticmethod
            def backward(ctx, g):
                return (g * ctx.k, None, g) + (None,) * (len(ctx.needs_input_grad) - 3)

        def error(fn):
            try:
                out = fn()
            except Exception as exc:    # the exception's type only: the message is open
                return type(exc).__name__
            return [out.tolist(), len(out.grad_fn.next_functions)]

        for dname, dt in _dtypes(torch).items():
            x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
            log(dname, {
                "missing": error(lambda: Scale.apply()),
                "too many": error(lambda x=x: Scale.apply(x, 1.0, None, 4.0)),
                "unknown keyword": error(lambda x=x: Scale.apply(x, j=1.0)),
                "keyword-only": error(lambda x=x: KeywordOnly.apply(x)),
                "keyword-only given": error(lambda x=x: KeywordOnly.apply(x, k=2.0)),
            })
            t = torch.tensor([3.0, 4.0], dtype=dt, requires_grad=True)
            log(dname + " without setup_context", {
                "positional": error(lambda x=x: WithCtx.apply(x, 2.0)),
                "k=": error(lambda x=x: WithCtx.apply(x, k=2.0)),
                "x=": error(lambda x=x: WithCtx.apply(x=x)),
                "y= after k": error(lambda x=x, t=t: WithCtx.apply(x, 2.0, y=t)),
                "y= and k=": error(lambda x=x, t=t: WithCtx.apply(x, y=t, k=2.0)),
                "y= alone": error(lambda x=x, t=t: WithCtx.apply(x, y=t)),
                "k twice": error(lambda x=x: WithCtx.apply(x, 2.0, k=2.0)),
                "unknown": error(lambda x=x: WithCtx.apply(x, j=2.0)),
            })
            WithCtx.apply(x, 2.0, y=t).sum().backward()
            log(dname + " keyword tensor's gradient", [x.grad, t.grad])
    entries = dict(differential(prog).entries)
    assert set(entries["float32"].values()) == {"TypeError"}
    placed = entries["float32 without setup_context"]
    assert placed["y= alone"] == "TypeError" and placed["y= after k"][1] == 2


@pytest.mark.clause("FUNC-3")
@pytest.mark.parametrize("saved", ["output", "input", "both", "another input", "nothing"])
@pytest.mark.parametrize("mode", ["recorded", "no input requires grad", "no_grad",
                                  "no_grad, no input requires grad", "inference"])
def test_setup_context_may_not_save_an_input_returned_as_it_is(differential, saved, mode):
    """With setup_context, saving an input that forward returns as it is raises
    RETURNED_INPUT_SAVED, whether or not an argument requires grad, except with grad mode off
    for an input that requires grad (it comes back detached); an integer input too; a forward
    that takes ctx may save it (refimpl raised nothing)."""
    def prog(torch, log):
        class Same(torch.autograd.Function):
            @staticmethod
            def forward(x, w):
                return x, x * w

            @staticmethod
            def setup_context(ctx, inputs, output):
                kept = {"output": output[:1], "input": inputs[:1], "both": (inputs[0], output[0]),
                        "another input": inputs[1:], "nothing": ()}[saved]
                ctx.save_for_backward(*kept)

            @staticmethod
            def backward(ctx, g, gw):
                _ = ctx.saved_tensors
                return g + gw * 2, None

        class SameCtx(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x)
                return x, x * w

            @staticmethod
            def backward(ctx, g, gw):
                x, = ctx.saved_tensors
                return g + gw * 2 + x * 0, None

        rg = mode in ("recorded", "no_grad", "inference")
        grad_mode = {"no_grad": torch.no_grad, "no_grad, no input requires grad": torch.no_grad,
                     "inference": torch.inference_mode}.get(mode, torch.enable_grad)
        for dname, dt in _dtypes(torch).items():
            for sname, v in SHAPES.items():
                label = f"{dname} {sname}"
                for F in (Same, SameCtx):
                    x = torch.tensor(v, dtype=dt, requires_grad=rg)
                    w = torch.tensor(2.0, dtype=dt)
                    with grad_mode():
                        out = log.attempt(f"{label} {F.__name__}", lambda F=F, x=x, w=w:
                                          F.apply(x, w))
                    if out is not None:
                        log(f"{label} {F.__name__} out", [out[0] is x, out[0].requires_grad, out])
                n = torch.tensor([1, 2] if sname != "0-d" else 3)
                with grad_mode():
                    log.attempt(label + " an integer input", lambda n=n, w=w: Same.apply(n, w))
    entries = dict(differential(prog).entries)
    raised = entries["float32 1-d Same"] == ("raises", "RETURNED_INPUT_SAVED")
    assert raised == (saved not in ("another input", "nothing") and
                      mode not in ("no_grad", "inference"))
    assert entries["float32 1-d SameCtx"] == "ok"


@pytest.mark.clause("FUNC-14")
@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("beside", [False, True], ids=["alone", "beside a float argument"])
def test_an_integer_input_returned_as_it_is_comes_back_as_a_view(differential, dtype, beside):
    """An input of an integer or bool dtype that forward returns unchanged comes back as a
    view of it, as a float one does: a new object, its _base the input, sharing its version
    counter; it requires no grad, in any grad mode, recorded beside another argument or not."""
    def prog(torch, log):
        class Same(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, c):
                return x * 2, c

            @staticmethod
            def backward(ctx, g, gc):
                return g * 2, None

        for grad in (True, False):
            c = torch.tensor([1, 0, 1]) if dtype == "int64" else torch.tensor([True, False])
            x = torch.tensor([1.0, 2.0], requires_grad=beside)
            with torch.set_grad_enabled(grad):
                _, d = Same.apply(x, c)
            log(f"grad {grad}", [d is c, d._base is c, d.requires_grad, d.grad_fn is None])
            d[0] = 0 if dtype == "int64" else False
            log(f"grad {grad} written through it", [c, c._version, d._version])
    differential(prog)


@pytest.mark.clause("FUNC-14", "LEAF-9")
@pytest.mark.parametrize("grad_dtype", ["float64", "None", "unset"])
@pytest.mark.parametrize("returned", ["the input", "a view made in forward"])
def test_gradients_for_a_returned_input_are_cast_to_its_grad_dtype(differential, grad_dtype,
                                                                   returned):
    """The gradients a Function's node gets for an input returned as it is are cast to that
    leaf input's grad_dtype before its hooks and backward see them; a view forward makes of
    it is an output of its own dtype."""
    def prog(torch, log):
        got = []

        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x if returned == "the input" else x[:]

            @staticmethod
            def backward(ctx, g):
                got.append(("backward", str(g.dtype)))
                return g

        for shape in ((3,), (2, 2)):
            got.clear()
            x = torch.ones(shape, requires_grad=True)
            if grad_dtype != "unset":
                x.grad_dtype = None if grad_dtype == "None" else torch.float64
            v = F.apply(x)
            v.register_hook(lambda g: got.append(("hook", str(g.dtype))))
            (v * torch.full(shape, 2.0)).sum().backward()
            log(f"{shape}", [list(got), str(x.grad.dtype), x.grad])
    differential(prog)


@pytest.mark.clause("FUNC-4", "FUNC-11", "FUNC-12", "FUNC-3")
@pytest.mark.parametrize("setup", [False, True], ids=["ctx", "setup_context"])
@pytest.mark.parametrize("method", ["save_for_backward", "mark_dirty",
                                    "mark_non_differentiable"])
def test_what_ctx_is_given_that_is_not_a_tensor(differential, method, setup):
    """A value that is not a tensor given to save_for_backward raises SAVE_NOT_TENSOR where
    apply records (None is saved as None), and one given to mark_dirty or
    mark_non_differentiable raises after forward, recorded or not; ctx.saved_tensors is
    empty until the node is recorded."""
    def prog(torch, log):
        for bad in (1.0, 3, None, "s"):
            for rg, no_grad in ((True, False), (False, False), (True, True)):
                seen = []

                def body(ctx, x, bad=bad, seen=seen):
                    seen.append(len(ctx.saved_tensors))
                    if method == "mark_dirty":
                        x.mul_(1)
                        ctx.mark_dirty(x, bad)
                    elif method == "save_for_backward":
                        ctx.save_for_backward(x, bad)
                    else:
                        ctx.mark_non_differentiable(bad)
                    seen.append(len(ctx.saved_tensors))

                def result(x):
                    return x if method == "mark_dirty" else x * 2

                if setup:
                    class F(torch.autograd.Function):
                        @staticmethod
                        def forward(x):
                            return result(x)

                        @staticmethod
                        def setup_context(ctx, inputs, output):
                            body(ctx, inputs[0])

                        @staticmethod
                        def backward(ctx, g):
                            return g
                else:
                    class F(torch.autograd.Function):
                        @staticmethod
                        def forward(ctx, x):
                            body(ctx, x)
                            return result(x)

                        @staticmethod
                        def backward(ctx, g):
                            return g
                base = torch.ones(2, dtype=torch.float64, requires_grad=rg)
                x = base * 1 if rg else base.clone()
                with torch.no_grad() if no_grad else torch.enable_grad():
                    y = log.attempt(f"{bad!r} rg={rg} no_grad={no_grad}",
                                    lambda F=F, x=x: F.apply(x))
                log("requires_grad", None if y is None else y.requires_grad)
                log("seen, version", [seen, x._version])
    differential(prog)


@pytest.mark.clause("FUNC-11")
@pytest.mark.parametrize("returned_first", [True, False])
def test_dirty_not_returned_comes_after_the_returned_ones_checks(differential, returned_first):
    """A dirty tensor forward returns is checked (DIRTY_LEAF) and given the node before
    DIRTY_NOT_RETURNED is raised for one it does not return."""
    def prog(torch, log):
        class Dirty(torch.autograd.Function):
            @staticmethod
            def forward(ctx, kept, dropped):
                kept.mul_(2)
                dropped.mul_(2)
                ctx.mark_dirty(kept, dropped) if returned_first else ctx.mark_dirty(dropped, kept)
                return kept

            @staticmethod
            def backward(ctx, g):
                return g, g

        for kept_leaf, dropped_leaf in ((True, False), (False, True), (False, False)):
            def make(leaf):
                t = torch.tensor([1.0, 2.0], requires_grad=True)
                return t if leaf else t * 1
            kept, dropped = make(kept_leaf), make(dropped_leaf)
            log.attempt(f"kept leaf {kept_leaf}, dropped leaf {dropped_leaf}",
                        lambda kept=kept, dropped=dropped: Dirty.apply(kept, dropped))
            log("after", [t.grad_fn and t.grad_fn.name() for t in (kept, dropped)])
    differential(prog)


@pytest.mark.clause("FUNC-1", "UNSPEC-11", "MODE-9", "FUNC-14")
@pytest.mark.parametrize("inner", ["enable_grad", "plain"])
def test_a_view_forward_made_returned_with_grad_mode_off_and_then_written(differential, inner):
    """A view forward made, returned by an apply that grad mode left unrecorded (no_grad,
    inference mode) or that nothing requiring grad went into, then written with grad mode
    on: refused as a Function's view where forward recorded the view op, as a no_grad view
    where it did not (refimpl follows torch 2.13 where UNSPEC-11 leaves it open)."""
    def prog(torch, log):
        import contextlib
        for how in ("no_grad", "inference_mode", "nothing requires grad", "recorded"):
            for view in ("slice", "view", "select"):
                class V(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x, view=view):
                        def make():
                            return {"slice": lambda: x[0:1], "view": lambda: x.view(3),
                                    "select": lambda: x[0]}[view]()
                        if inner == "enable_grad":
                            with torch.enable_grad():
                                return make()
                        return make()

                    @staticmethod
                    def backward(ctx, g):
                        return g

                x = torch.ones(3, requires_grad=how != "nothing requires grad") * 1
                mode = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode}.get(
                    how, contextlib.nullcontext)
                with mode():
                    v = V.apply(x)
                log(f"{how} {view}", [v.requires_grad, v.grad_fn and v.grad_fn.name(),
                                      v.is_leaf])
                log.attempt("written", lambda v=v: v.add_(1.0))
                with torch.no_grad():
                    log.attempt("written under no_grad", lambda v=v: v.add_(1.0))
    differential(prog)


@pytest.mark.clause("FUNC-4", "FUNC-11", "FUNC-12")
@pytest.mark.parametrize("given", ["leaf", "non-leaf", "not requiring grad", "no_grad"])
def test_ctx_checks_come_in_torchs_order(differential, given):
    """What is saved is checked first (where the call is recorded), then what is marked
    non-differentiable, then the dirty tensors are bumped and checked: SAVE_NOT_TENSOR,
    NON_DIFFERENTIABLE_NOT_TENSOR, DIRTY_NOT_TENSOR, DIRTY_LEAF, DIRTY_NOT_RETURNED, with the
    version as each leaves it."""
    def prog(torch, log):
        import contextlib
        import itertools
        for save, non_diff, dirty in itertools.product(
                (None, "number"), (None, "number"), (None, "x", "number", "x unreturned")):
            class F(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, save=save, non_diff=non_diff, dirty=dirty):
                    out = x * 3
                    if dirty is not None:
                        x.mul_(2)
                        ctx.mark_dirty(x, 1.0) if dirty == "number" else ctx.mark_dirty(x)
                    if non_diff:
                        ctx.mark_non_differentiable(1.0)
                    if save:
                        ctx.save_for_backward(x, 2.0)
                    return (out if dirty == "x unreturned" else x) if dirty else out

                @staticmethod
                def backward(ctx, g):
                    return g

            x = torch.tensor([1.0, 2.0], requires_grad=given in ("leaf", "no_grad"))
            x = x * 1 if given == "non-leaf" else x
            if given == "non-leaf":
                x = torch.tensor([1.0, 2.0], requires_grad=True) * 1
            mode = torch.no_grad if given == "no_grad" else contextlib.nullcontext
            with mode():
                log.attempt(f"save {save}, non-diff {non_diff}, dirty {dirty}",
                            lambda x=x, F=F: F.apply(x))
            log("version", x._version)
    differential(prog)
