"""Differential tests for saved-tensor hooks: SAVED-1 to SAVED-12 (spec/saved.md).

The hooks in force are global to the thread: every program registers them with `with`, so a
failing engine leaves none behind. Hooks log what they see into lists, which are logged once the
program is done; the order of the calls an op makes to one hook is left open (UNSPEC-13), so
calls of one op are logged sorted.
"""
import pytest

DTYPES = ("float32", "float64")
SHAPES = ((), (2,), (2, 2))
# an op and whether it needs a second operand
OPS = {
    "mul": lambda h, y: h * y,
    "div": lambda h, y: h / y,
    "matmul": lambda h, y: h @ y,
    "exp": lambda h, y: h.exp(),
    "sin": lambda h, y: h.sin(),
    "relu": lambda h, y: h.relu(),
    "pow": lambda h, y: h ** 2,
    "add": lambda h, y: h + y,
    "mul by a number": lambda h, y: h * 3,
    "sum": lambda h, y: h.sum(),
}


def _operands(torch, dtype, shape):
    dt = getattr(torch, dtype)
    n = 1
    for d in shape:
        n *= d
    x = (torch.arange(1, n + 1, dtype=dt) * 0.5).reshape(shape).requires_grad_()
    y = (torch.arange(1, n + 1, dtype=dt) * 0.25 + 1).reshape(shape).requires_grad_()
    return x, y


def _recording_hooks(torch, calls, keep="clone"):
    def pack(t):
        calls.append(("pack", t.tolist(), t.requires_grad))
        return t.detach().clone() if keep == "clone" else t.detach() if keep == "detach" else t

    def unpack(p):
        calls.append(("unpack", p.tolist()))
        return p
    return torch.autograd.graph.saved_tensors_hooks(pack, unpack)


def _sorted(calls):
    return sorted(calls, key=repr)


@pytest.mark.clause("SAVED-1")
@pytest.mark.clause("SAVED-2")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_pack_once_per_saved_tensor_unpack_once_per_pass(differential, dtype, shape):
    def prog(torch, log):
        for name, op in OPS.items():
            if name == "matmul" and shape == ():
                continue
            x, y = _operands(torch, dtype, shape)
            h = x * 1
            calls = []
            with _recording_hooks(torch, calls):
                r = op(h, y)
            log(f"{name}: packs", _sorted(calls))
            calls.clear()
            r.sum().backward(retain_graph=True)
            log(f"{name}: first pass", _sorted(calls))
            calls.clear()
            r.sum().backward()
            log(f"{name}: second pass", _sorted(calls))
            log(f"{name}: grads", [x.grad, y.grad])
    differential(prog)


# the rest of the saved-values table of VER-9 (DERIV-8 too), and in-place variants
TABLE = {
    "log": lambda h: h.log(), "cos": lambda h: h.cos(), "abs": lambda h: h.abs(),
    "clamp": lambda h: h.clamp(0.6, 1.5), "sqrt": lambda h: h.sqrt(), "tanh": lambda h: h.tanh(),
    "sigmoid": lambda h: h.sigmoid(), "max": lambda h: h.max(), "min": lambda h: h.min(),
    "max(dim)": lambda h: h.max(0)[0], "where": lambda h: h.where(h > 1, h * 2),
    "mean": lambda h: h.mean(), "floor": lambda h: h.floor(), "double": lambda h: h.double(),
    "t": lambda h: h.t(), "index": lambda h: h[0], "divide by a number": lambda h: h / 2,
    "pow 0": lambda h: h ** 0, "pow 1": lambda h: h.pow(1), "sub": lambda h: h - h,
    "neg": lambda h: -h, "expand": lambda h: h.unsqueeze(0).expand(2, 2, 2),
    "clone": lambda h: h.clone(), "reshape": lambda h: h.reshape(4),
    "batched matmul": lambda h: h.unsqueeze(0) @ h, "matrix @ vector": lambda h: h @ h[0],
    "sum(dim)": lambda h: h.sum(0), "exp_": lambda h: h.clone().exp_(),
    "sin_": lambda h: h.clone().sin_(), "mul_": lambda h: h.clone().mul_(h),
}


@pytest.mark.clause("SAVED-1")
@pytest.mark.clause("SAVED-2")
@pytest.mark.parametrize("dtype", DTYPES)
def test_pack_follows_the_saved_values_table(differential, dtype):
    def prog(torch, log):
        for name, op in TABLE.items():
            x = torch.tensor([[0.5, 1.0], [2.0, 3.0]], dtype=getattr(torch, dtype),
                             requires_grad=True)
            h = x * 1
            calls = []
            with _recording_hooks(torch, calls):
                r = op(h)
            log(f"{name}: packs", _sorted(calls))
            calls.clear()
            r.double().sum().backward()
            log(f"{name}: unpacks", _sorted(calls))
            log(f"{name}: grad", x.grad)
    differential(prog)


@pytest.mark.clause("SAVED-1")
def test_no_pack_when_nothing_is_recorded(differential):
    def prog(torch, log):
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        n = torch.tensor([0.5, 1.0])
        calls = []
        with _recording_hooks(torch, calls):
            n.sin()
            n * n
            x.detach().exp()
            with torch.no_grad():
                x.sin()
            a = x * n           # only n is saved: x's factor
            b = n * x
        log("packs", _sorted(calls))
        log("grad", torch.autograd.grad((a + b).sum(), x)[0])
    differential(prog)


@pytest.mark.clause("SAVED-2")
def test_unpack_per_pass_and_only_for_nodes_the_pass_runs(differential):
    def prog(torch, log):
        x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
        z = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
        calls = []
        with _recording_hooks(torch, calls):
            a = x.sin()
            b = z.exp()
            s = (a + b).sum()
        log("packs", _sorted(calls))
        calls.clear()
        log("grad of x", torch.autograd.grad(s, x, retain_graph=True)[0])
        log("unpacks for x only", calls)
        calls.clear()
        for _ in range(3):
            torch.autograd.grad(s, (x, z), retain_graph=True)
        log("three passes", _sorted(calls))
    differential(prog)


@pytest.mark.clause("SAVED-2")
def test_hooks_in_force_at_backward_do_not_matter(differential):
    def prog(torch, log):
        fwd, bwd = [], []
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        r = x.sin()
        with _recording_hooks(torch, bwd):
            r.sum().backward()
        log("registered after the forward", [bwd, x.grad])
        x.grad = None
        with _recording_hooks(torch, fwd):
            r = x.cos()
        with _recording_hooks(torch, bwd):
            r.sum().backward()
        log("the forward's pair unpacks", [fwd, bwd, x.grad])
    differential(prog)


@pytest.mark.clause("SAVED-3")
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradient_uses_what_unpack_returns(differential, dtype):
    def prog(torch, log):
        for name in ("sin", "exp", "mul", "relu", "matmul", "pow"):
            x, y = _operands(torch, dtype, (2,))
            h = x * 2
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(),
                                                          lambda p: p * 10):
                r = OPS[name](h, y)
            r.sum().backward()
            log(name, [x.grad, y.grad])
    differential(prog)


@pytest.mark.clause("SAVED-3")
def test_unpack_returning_a_non_tensor_raises(differential):
    def prog(torch, log):
        for value in (3.0, None, [1.0, 2.0], "packed"):
            for name in ("sin", "mul", "matmul"):
                x, y = _operands(torch, "float32", (2,))
                with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(),
                                                              lambda p, v=value: v):
                    r = OPS[name](x, y)
                log.attempt(f"{name} unpack gives {value!r}", lambda r=r: r.sum().backward())
                log(f"{name} grad after", x.grad)
    differential(prog)


@pytest.mark.clause("SAVED-3")
def test_an_exception_in_a_hook_propagates(differential):
    def prog(torch, log):
        x = torch.tensor([0.5, 1.0], requires_grad=True)

        def failing(_):
            raise KeyError("hook failed")

        def forward():
            with torch.autograd.graph.saved_tensors_hooks(failing, lambda p: p):
                x.sin()
        log.attempt("pack raises", forward)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), failing):
            r = x.exp()
        log.attempt("unpack raises", lambda: r.sum().backward())
        log("no gradient", x.grad)
    differential(prog)


@pytest.mark.clause("SAVED-4")
def test_innermost_pair_wins_and_outer_comes_back(differential):
    def prog(torch, log):
        calls = []

        def pair(tag):
            return torch.autograd.graph.saved_tensors_hooks(
                lambda t: (calls.append(("pack", tag)), t.detach())[1],
                lambda p: (calls.append(("unpack", tag)), p)[1])
        x = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
        with pair("outer"):
            a = x.sin()
            with pair("middle"):
                with pair("inner"):
                    b = x.exp()
                c = x.cos()
            d = x * x
        e = x.log()
        log("forward", calls)
        calls.clear()
        for t in (a, b, c, d, e):
            t.sum().backward()
            log("backward", calls)
            calls.clear()
        log("grad", x.grad)
        try:
            with pair("left by an exception"):
                raise ValueError("leave")
        except ValueError:
            pass
        x.sin().sum().backward()
        log("no pair after an exception", calls)
    differential(prog)


@pytest.mark.clause("SAVED-5")
def test_pack_may_return_any_object(differential):
    def prog(torch, log):
        store, got = {}, []

        def pack(t):
            key = f"key{len(store)}"
            store[key] = t.detach().clone()
            return key

        def unpack(key):
            got.append(key)
            return store[key]
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        y = torch.tensor([2.0, 3.0], requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            r = (x * y).exp()
        r.sum().backward(retain_graph=True)
        r.sum().backward()
        log("keys unpacked", sorted(got))
        log("grads", [x.grad, y.grad])
        for packed in (None, (1, 2), 7):
            seen = []
            z = torch.tensor([0.5, 1.0], requires_grad=True)
            with torch.autograd.graph.saved_tensors_hooks(
                    lambda t, v=packed: v,
                    lambda p, seen=seen: (seen.append(p), torch.tensor([0.25, 4.0]))[1]):
                s = z.sin()
            s.sum().backward()
            log(f"unpack got {packed!r}", [seen, z.grad])
    differential(prog)


@pytest.mark.clause("SAVED-6")
@pytest.mark.parametrize("keep", ("clone", "detach", "itself"))
def test_no_version_check_and_values_from_unpack(differential, keep):
    def prog(torch, log):
        for name in ("sin", "exp", "mul", "pow", "matmul"):
            x = torch.tensor([[0.5, 1.0], [2.0, 3.0]], requires_grad=True)
            calls = []
            with _recording_hooks(torch, calls, keep):
                h = x * 1
                r = OPS[name](h, h)
            (r if name == "exp" else h).mul_(2.0)
            log.attempt(name, lambda r=r: r.sum().backward())
            log(f"{name} grad", x.grad)
    differential(prog)


@pytest.mark.clause("SAVED-6")
def test_values_saved_before_the_hooks_are_still_checked(differential):
    def prog(torch, log):
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        h = x * 1
        a = h.sin()
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
            b = h.cos()
        h.add_(1.0)
        log.attempt("unhooked sin", lambda: a.sum().backward())
        log.attempt("hooked cos", lambda: b.sum().backward())
        log("grad", x.grad)
    differential(prog)


@pytest.mark.clause("SAVED-7")
@pytest.mark.parametrize("name", ("sin", "exp", "mul", "matmul"))
def test_freed_packed_values_raise_without_unpacking(differential, name):
    def prog(torch, log):
        x, y = _operands(torch, "float64", (2, 2))
        calls = []
        with _recording_hooks(torch, calls):
            r = OPS[name](x * 1, y)
        r.sum().backward(retain_graph=True)
        r.sum().backward()
        log("two passes", [len(calls), x.grad])
        calls.clear()
        log.attempt("third pass", lambda: r.sum().backward())
        log("unpacks after freeing", calls)
    differential(prog)


@pytest.mark.clause("SAVED-8")
@pytest.mark.parametrize("name", ("sin", "exp", "mul"))
def test_pack_hook_writing_its_input_raises(differential, name):
    def prog(torch, log):
        x, y = _operands(torch, "float32", (2,))
        h = x * 1

        def forward(t):
            with torch.autograd.graph.saved_tensors_hooks(lambda s: s.mul_(2.0), lambda p: p):
                OPS[name](t, y)
        log.attempt("on a result", lambda: forward(h))
        log.attempt("on a leaf", lambda: forward(x))
        with torch.autograd.graph.saved_tensors_hooks(lambda s: s.detach(), lambda p: p):
            r = OPS[name](h, y)
        r.sum().backward()
        log("hooks usable again", x.grad)
    differential(prog)


@pytest.mark.clause("SAVED-9")
@pytest.mark.parametrize("dtype", DTYPES)
def test_save_on_cpu_keeps_values_on_cpu(differential, dtype):
    def prog(torch, log):
        for name in ("sin", "exp", "mul", "matmul", "relu"):
            x, y = _operands(torch, dtype, (2, 2))
            with torch.autograd.graph.save_on_cpu():
                r = OPS[name](x * 1, y)
            r.sum().backward()
            log(f"{name} grads", [x.grad, y.grad])
        for pin in (False, True):
            x, y = _operands(torch, dtype, (2,))
            with torch.autograd.graph.save_on_cpu(pin_memory=pin):
                r = (x * y).exp()
            r.sum().backward()
            log(f"pin_memory={pin} grads", [x.grad, y.grad])
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        with torch.autograd.graph.save_on_cpu(pin_memory=False):
            h = x * 1
            a = h.sin()
        h.mul_(2.0)
        log.attempt("written after save_on_cpu", lambda: a.sum().backward())
        log("grad from the written values", x.grad)
    differential(prog)


@pytest.mark.clause("SAVED-10")
def test_disable_saved_tensors_hooks(differential):
    def prog(torch, log):
        graph = torch.autograd.graph
        pair = graph.saved_tensors_hooks(lambda t: t.detach(), lambda p: p)
        messages = []
        for register in (lambda: graph.saved_tensors_hooks(lambda t: t, lambda p: p),
                         graph.save_on_cpu):
            try:
                with graph.disable_saved_tensors_hooks("no hooks here"):
                    cm = register()        # making it is fine, entering it is not
                    with cm:
                        messages.append("entered")
            except RuntimeError as e:
                messages.append(str(e))
        log("registering inside", messages)
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        with graph.disable_saved_tensors_hooks("off"):
            r = x.sin()
        r.sum().backward()
        log("ops record inside", x.grad)
        try:
            with pair:
                with graph.disable_saved_tensors_hooks("entered with hooks"):
                    messages.append("entered with hooks")
        except RuntimeError as e:
            log("disabling while hooks are in force", str(e))
        try:
            with graph.disable_saved_tensors_hooks("outer"):
                with graph.disable_saved_tensors_hooks("inner"):
                    pass
                with pair:
                    pass
        except RuntimeError as e:
            log("outer message back", str(e))
        calls = []
        with _recording_hooks(torch, calls):
            x.exp()
        log("enabled again", len(calls))
    differential(prog)


@pytest.mark.clause("SAVED-11")
def test_custom_function_saved_tensors_go_through_the_hooks(differential):
    def prog(torch, log):
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * a * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return 2 * a * b * g, a * a * g
        calls = []
        with torch.autograd.graph.saved_tensors_hooks(
                lambda t: (calls.append(("pack", t.tolist())), t.detach().clone())[1],
                lambda p: (calls.append(("unpack", p.tolist())), p * 10)[1]):
            x = torch.tensor([0.5, 1.0], requires_grad=True)
            y = torch.tensor([2.0, 3.0], requires_grad=True)
            r = Square.apply(x, y)
        log("packs", calls)
        calls.clear()
        r.sum().backward()
        log("unpacks", calls)
        log("grads from unpacked values", [x.grad, y.grad])
    differential(prog)


@pytest.mark.clause("SAVED-12")
@pytest.mark.parametrize("keep", ("clone", "detach", "itself"))
def test_unpacked_value_stands_for_the_saved_tensor_under_create_graph(differential, keep):
    def prog(torch, log):
        for name in ("sin", "exp", "mul"):
            x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
            h = x * 2
            calls = []
            with _recording_hooks(torch, calls, keep):
                r = OPS[name](h, h)
            g, = torch.autograd.grad(r.sum(), x, create_graph=True)
            log(f"{name} first", [g, g.requires_grad])
            log(f"{name} second", torch.autograd.grad(g.sum(), x)[0])
        x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
        h = x * 2
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(),
                                                      lambda p: p * 10):
            r = h.sin()
        g, = torch.autograd.grad(r.sum(), x, create_graph=True)
        log("scaled unpack: first", g)
        log("scaled unpack: second", torch.autograd.grad(g.sum(), x)[0])
    differential(prog)


@pytest.mark.clause("SAVED-12")
@pytest.mark.parametrize("keep", ("clone", "detach", "itself"))
@pytest.mark.parametrize("saved", ("a leaf input", "a non-leaf input", "its output"))
def test_a_custom_functions_unpacked_value_stands_for_the_saved_tensor(differential, keep,
                                                                        saved):
    """What a custom Function's backward reads from ctx.saved_tensors under hooks is recorded
    as the saved tensor itself under create_graph, whatever pack did to it, so that its second
    derivative flows: for a saved input, to its history; for its own output, through the
    Function's node again."""
    def prog(torch, log):
        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                out = a * a * a
                ctx.save_for_backward(out if saved == "its output" else a)
                return out

            @staticmethod
            def backward(ctx, g):
                s, = ctx.saved_tensors
                if saved == "its output":       # d(a^3)/da = 3 a^2 = 3 out^(2/3)
                    return 3 * s.abs() ** (2 / 3) * g
                return 3 * s * s * g

        for dt in (torch.float32, torch.float64):
            for shape in SHAPES:
                x = torch.full(shape, 0.5, dtype=dt, requires_grad=True) + torch.zeros(
                    shape, dtype=dt)
                x = x.detach().requires_grad_()
                a = x if saved == "a leaf input" else x * 2
                calls = []
                with _recording_hooks(torch, calls, keep):
                    y = Cube.apply(a)
                g, = torch.autograd.grad(y.sum(), x, create_graph=True)
                label = f"{dt} {shape}"
                log(label + " first", [g, g.requires_grad])
                log(label + " second", torch.autograd.grad(g.sum(), x)[0])
    differential(prog)


@pytest.mark.clause("UNSPEC-13")
def test_what_is_left_open_leaves_the_rest_specified(differential):
    def prog(torch, log):
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        y = torch.tensor([2.0, 3.0], requires_grad=True)
        seen = []
        with torch.autograd.graph.saved_tensors_hooks(
                lambda t: (seen.append(t.tolist()), t.detach().clone())[1], lambda p: p):
            m = x * y
        log("packed values, in any order", sorted(seen))   # the order is open
        m.sum().backward()
        log("grads", [x.grad, y.grad])
        h = x.detach() * 1

        def writing_pack():
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1.0), lambda p: p):
                (h.requires_grad_() * 1).sin()
        log.attempt("pack hook writes", writing_pack)
        # h's values after the refused write are open; a fresh tensor is specified again
        z = torch.tensor([0.5, 1.0], requires_grad=True)
        z.sin().sum().backward()
        log("fresh tensor", z.grad)
    differential(prog)


# an in-place op, and whether its backward needs the target's old value (it is packed as a
# copy) or its result (the target itself is packed, after the write)
INPLACE = {"sin_": "old value", "mul_ by a number": "none", "exp_": "result",
           "pow_": "old value", "relu_": "result"}


@pytest.mark.clause("SAVED-1")
@pytest.mark.clause("SAVED-6")
@pytest.mark.parametrize("op", INPLACE)
@pytest.mark.parametrize("through_view", [False, True], ids=["target", "view"])
@pytest.mark.parametrize("keep", ("itself", "clone"))
def test_an_in_place_op_packs_a_copy_of_the_old_value_and_the_target_as_written(
        differential, op, through_view, keep):
    """What pack gets from an in-place op: a copy of the target's old value (a new tensor with
    CloneBackward0 where it requires grad), or the target itself once written; an identity
    pair then computes with the copy's values or with the target's values at backward."""
    def prog(torch, log):
        calls = []
        x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)

        def pack(t):
            calls.append((t.tolist(), t._version, t.requires_grad,
                          t.grad_fn.name() if t.grad_fn is not None else None))
            return t if keep == "itself" else t.detach().clone()
        h = x * 1
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            target = h[1:] if through_view else h
            if op == "sin_":
                target.sin_()
            elif op == "mul_ by a number":
                target.mul_(3.0)
            elif op == "exp_":
                target.exp_()
            elif op == "pow_":
                target.pow_(2)
            else:
                target.relu_()
        log("pack calls", calls)
        h.add_(1.0)                     # written after the pack: not version-checked
        log("backward", log.attempt("backward", lambda: h.sum().backward()))
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("SAVED-1")
def test_a_pack_hook_that_runs_in_place_ops_still_gets_copies_of_old_values(differential):
    """A pack hook may itself run in-place ops (on its own buffers): the in-place op being
    saved still packs a copy of its target's old value."""
    def prog(torch, log):
        seen = []
        buf = torch.zeros(2)

        def pack(t):
            buf.mul_(1.0)
            seen.append((t.tolist(), t._version, t.grad_fn.name() if t.grad_fn else None))
            return t
        x = torch.tensor([0.5, 2.0], requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            h = x * 1
            h.div_(torch.tensor([2.0, 4.0], requires_grad=True))
            k = x * 1
            k.mul_(x)
        log("packed", sorted(seen, key=repr))
        (h.sum() + k.sum()).backward()
        log("x.grad", x.grad)
    differential(prog)
