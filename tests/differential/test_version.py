"""Differential tests for the version counter and saved tensors: VER-1 to VER-16 (spec/version.md).

Each program probes its clause from another angle than the spec example (float64, other shapes,
other ops, views, broadcasting) and logs versions, values, gradients and error kinds.
"""
import pytest

from tests.differential.test_function import _square


def f64(torch, rows, requires_grad=False):
    return torch.tensor(rows, dtype=torch.float64, requires_grad=requires_grad)


ROWS = [[0.5, -1.5], [2.0, 0.25], [1.25, 3.0]]


def saved_probe(torch, log, label, fn, n_inputs, needs_grad, write, rows=ROWS):
    """Run fn on fresh inputs, write one of them (or the output) in place, then backward.

    An input that needs grad is a non-leaf (`leaf * 1`) so that it can be written; the log says
    whether backward raised and, if not, the leaf gradients.
    """
    leaves = [f64(torch, rows, requires_grad=g) for g in needs_grad[:n_inputs]]
    ins = [x * 1 if g else x.clone() for x, g in zip(leaves, needs_grad, strict=True)]
    out = fn(*ins)
    target = out if write == "out" else ins[int(write[-1])]
    target.add_(0.0)    # a write that keeps the values: only the version moves
    ok = log.attempt(f"{label} write {write}", lambda: out.sum().backward() or True)
    if ok:      # after a raise the leaves' .grad is unspecified (UNSPEC-1)
        log(f"{label} grads", [x.grad for x in leaves])


UNARY = {
    "pow3": lambda a: a.pow(3), "pow0": lambda a: a ** 0, "log": lambda a: a.log(),
    "sin": lambda a: a.sin(), "cos": lambda a: a.cos(), "abs": lambda a: a.abs(),
    "clamp": lambda a: a.clamp(min=-1.0), "exp": lambda a: a.exp(), "tanh": lambda a: a.tanh(),
    "sigmoid": lambda a: a.sigmoid(), "relu": lambda a: a.relu(),
}


@pytest.mark.clause("VER-1")
def test_fresh_tensors_start_at_version_zero(differential):
    def prog(torch, log):
        base = torch.ones(2, 2, dtype=torch.float64)
        for _ in range(3):
            base.mul_(2.0)
        log("base", base._version)
        made = {"zeros_like": torch.zeros_like(base), "arange": torch.arange(4),
                "clone": base.clone(), "matmul": base @ base, "sum": base.sum(0),
                "int op": torch.arange(3) + 1, "bool": torch.tensor([True])}
        log("fresh", {k: v._version for k, v in made.items()})
        log("view of written base", base[0]._version)
    differential(prog)


@pytest.mark.clause("VER-2")
def test_every_kind_of_write_counts_once(differential):
    def prog(torch, log):
        t = torch.zeros(2, 3, dtype=torch.float64)
        steps = [
            ("fill_", lambda: t.fill_(1.0)),
            ("copy_", lambda: t.copy_(torch.ones(3, dtype=torch.float64))),
            ("setitem row", lambda: t.__setitem__(0, 5.0)),
            ("setitem slice", lambda: t.__setitem__((slice(None), slice(1, 3)), 2.0)),
            ("zero_", lambda: t.zero_()), ("clamp_", lambda: t.clamp_(0.0, 1.0)),
            ("sub_ zero", lambda: t.sub_(0.0)),
        ]
        for label, step in steps:
            step()
            log(label, t._version)
        with torch.no_grad():
            t += 1
        log("under no_grad", t._version)
        i = torch.arange(3)
        i.add_(1)
        i[0] = 7
        log("int64", [i._version, i])
    differential(prog)


@pytest.mark.clause("VER-3")
def test_reads_and_backward_leave_versions_alone(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        h = w * 1
        outs = [h.t() @ h, h.sigmoid(), h.clamp(0.0, 2.5), h.mean(1, keepdim=True), h / 3]
        sum(o.sum() for o in outs).backward()
        log("versions", [w._version, h._version] + [o._version for o in outs])
        log("grad version", w.grad._version)
    differential(prog)


@pytest.mark.clause("VER-4")
def test_chained_views_share_one_counter(differential):
    def prog(torch, log):
        base = torch.zeros(2, 3, dtype=torch.float64)
        views = {"unsqueeze": base.unsqueeze(0), "transpose": base.transpose(0, 1),
                 "view": base.view(6), "col": base[:, 1], "expand": base[0:1].expand(4, 3)}
        chained = views["transpose"][2].unsqueeze(1)
        chained.add_(3.0)
        log("after chained write", [base._version] + [v._version for v in views.values()])
        views["view"][0] = 9.0
        log("after setitem on view", [base._version, chained._version])
        log("base", base)
    differential(prog)


@pytest.mark.clause("VER-5")
def test_detach_write_is_seen_by_the_check(differential):
    def prog(torch, log):
        x = f64(torch, [0.5, 1.0, 2.0], requires_grad=True)
        h = x.tanh()
        d = h.detach()[1:]
        d.mul_(1.0)
        log("versions", [h._version, d._version])
        log.attempt("backward through tanh", lambda: h.sum().backward())
        h2 = x * 1
        h2.detach().zero_()
        log("h2", [h2, h2._version, h2.requires_grad])
    differential(prog)


@pytest.mark.clause("VER-6")
def test_data_write_goes_unchecked(differential):
    def prog(torch, log):
        x = f64(torch, [0.5, 1.0], requires_grad=True)
        h = x * 1
        y = h.exp()
        y.data.fill_(2.0)              # exp saves its output: the gradient now uses 2.0
        log("versions", [y._version, y.data._version])
        log.attempt("backward", lambda: y.sum().backward())
        log("x.grad", x.grad)
        base = torch.ones(2)
        base.add_(1.0)
        d = base.data
        base.add_(1.0)
        log("data counter", [d._version, base._version, d])
    differential(prog)


@pytest.mark.clause("VER-7")
def test_any_write_to_a_saved_tensor_raises(differential):
    def prog(torch, log):
        cases = {
            "setitem input of mul": lambda h: h.__setitem__(1, 0.0),
            "view write input of mul": lambda h: h.view(2, 2)[0].add_(1.0),
            "zero_": lambda h: h.zero_(),
        }
        for label, write in cases.items():
            w = f64(torch, [1.0, 2.0, 3.0, 4.0], requires_grad=True)
            h = w * 1
            y = (h * w).sum()
            write(h)
            log.attempt(label, lambda y=y: y.backward())
        w = f64(torch, [1.0, 2.0], requires_grad=True)
        h = w * 1
        y = (h * w).sum()
        h.mul_(2.0)
        h.div_(2.0)
        log("values restored", h)
        log.attempt("restored values still raise", lambda: y.backward())
    differential(prog)


@pytest.mark.clause("VER-8")
def test_writes_to_unsaved_tensors_are_harmless(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        h = w * 1
        y = (h - 2.0).t().sum(0) + h.mean()     # sub, t, sum, mean save nothing
        h.fill_(100.0)
        log.attempt("backward", lambda: y.sum().backward())
        log("w.grad", w.grad)
        h2 = w * 1
        r = h2.relu() * h2.sigmoid()   # relu and sigmoid save outputs; mul saves both factors
        h2.zero_()                      # the input of relu and sigmoid: saved by neither
        log.attempt("relu/sigmoid input written", lambda: r.sum().backward())
        log("w.grad after", w.grad)
    differential(prog)


@pytest.mark.clause("VER-9")
def test_ops_that_save_their_input(differential):
    def prog(torch, log):
        for name in ("pow3", "pow0", "log", "sin", "cos", "abs", "clamp"):
            for write in ("in0", "out"):
                rows = [[0.5, 1.5], [2.0, 0.25]] if name == "log" else ROWS   # log needs x > 0
                saved_probe(torch, log, name, UNARY[name], 1, [True], write, rows)
        # the in-place variant keeps a copy of the value before the write
        x = f64(torch, [0.5, 2.0], requires_grad=True)
        h = x * 1
        h.cos_()
        h.mul_(3.0)
        log.attempt("cos_ then mul_", lambda: h.sum().backward())
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("VER-10")
def test_ops_that_save_their_output(differential):
    def prog(torch, log):
        for name in ("exp", "tanh", "sigmoid", "relu"):
            for write in ("in0", "out"):
                saved_probe(torch, log, name, UNARY[name], 1, [True], write)
        x = f64(torch, [-1.0, 2.0], requires_grad=True)
        h = x * 1
        h.relu_()
        log.attempt("relu_ then backward",
                    lambda: torch.autograd.grad(h.sum(), x, retain_graph=True))
        h.add_(1.0)
        log.attempt("relu_ then add_", lambda: h.sum().backward())
    differential(prog)


@pytest.mark.clause("VER-11")
def test_mul_and_div_save_conditionally(differential):
    def prog(torch, log):
        ops = {"mul": lambda a, b: a * b, "div": lambda a, b: a / b,
               "mul bcast": lambda a, b: a * b[0], "div bcast": lambda a, b: a / b[:, :1]}
        for name, fn in ops.items():
            for needs in ([True, True], [True, False], [False, True]):
                for write in ("in0", "in1"):
                    saved_probe(torch, log, f"{name} {needs}", fn, 2, needs, write)
    differential(prog)


@pytest.mark.clause("VER-12")
def test_matmul_saves_conditionally(differential):
    def prog(torch, log):
        for needs in ([True, True], [True, False], [False, True]):
            for write in ("in0", "in1", "out"):
                saved_probe(torch, log, f"matmul {needs}", lambda a, b: a @ b.t(), 2, needs, write)
        # 1-D and batched shapes
        for shapes in ([(3,), (3,)], [(2, 3), (3,)], [(4, 2, 3), (3, 2)]):
            a = torch.ones(*shapes[0], dtype=torch.float64, requires_grad=True)
            b = torch.ones(*shapes[1], dtype=torch.float64) * 2
            y = (a @ b).sum()
            a2 = a * 1
            y2 = (a2 @ b).sum()
            a2.add_(1.0)
            log.attempt(f"{shapes} write unsaved a", lambda y2=y2: y2.backward())
            b.add_(1.0)
            log.attempt(f"{shapes} write saved b", lambda y=y: y.backward())
    differential(prog)


@pytest.mark.clause("VER-13")
def test_shape_ops_and_linear_ops_save_nothing(differential):
    def prog(torch, log):
        ops = {
            "add alpha": lambda a: a.add(a * 2, alpha=3), "sub": lambda a: 1.0 - a,
            "neg": lambda a: -a, "sum dim": lambda a: a.sum(1, keepdim=True),
            "mean": lambda a: a.mean(0), "clone": lambda a: a.clone(),
            "reshape": lambda a: a.reshape(2, 3), "squeeze": lambda a: a.unsqueeze(1).squeeze(1),
            "expand": lambda a: a[:, :1].expand(3, 4), "index": lambda a: a[1:, 0],
            "scalar mul div": lambda a: a * 2.5 / 4,
        }
        for name, fn in ops.items():
            saved_probe(torch, log, name, fn, 1, [True], "in0")
    differential(prog)


@pytest.mark.clause("VER-14")
def test_writes_do_not_raise_until_backward(differential):
    def prog(torch, log):
        x = f64(torch, [1.0, -1.0, 0.5], requires_grad=True)
        h = x * 1
        graphs = [h.sin().sum(), (h ** 2).sum(), h.exp().sum()]
        log.attempt("writes", lambda: [h.add_(1.0), h.__setitem__(0, 0.0), h.clamp_(-2.0, 2.0)])
        log("h", [h, h._version])
        log.attempt("backward of exp graph (saved its output, not h)", lambda: graphs[2].backward())
        log("x.grad", x.grad)
        log.attempt("backward of sin graph", lambda: graphs[0].backward())
        log.attempt("backward of pow graph", lambda: graphs[1].backward())
    differential(prog)


@pytest.mark.clause("VER-15")
def test_autograd_grad_checks_the_nodes_it_runs(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0], [0.5, 1.0]], requires_grad=True)
        v = f64(torch, [1.0, -1.0], requires_grad=True)
        h = w @ v                     # saves w (v needs grad) and v (w needs grad)
        out = h.tanh().sum()
        v.data.mul_(1.0)              # .data: unseen
        g = log.attempt("grad wrt w after .data write",
                        lambda: torch.autograd.grad(out, w, retain_graph=True))
        log("dw", g)
        t = out.grad_fn               # keep the graph alive
        log("node", t.name())
        w2 = w * 1
        out2 = (w2 @ v).sum()
        w2.detach().add_(0.0)
        log.attempt("grad wrt v after detach write", lambda: torch.autograd.grad(out2, v))
    differential(prog)


# ops whose node saves an input (VER-9) and ops whose node saves its result (VER-10)
SAVES_INPUT = {"sin": lambda a: a.sin(), "log": lambda a: a.log(), "pow3": lambda a: a.pow(3),
               "mul": lambda a: a * a.detach().clone(), "div": lambda a: 1.0 / a}
SAVES_RESULT = {"exp": lambda a: a.exp(), "tanh": lambda a: a.tanh(),
                "sigmoid": lambda a: a.sigmoid()}


@pytest.mark.clause("VER-16")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("when", ["detach_", "write then detach_", "detach_ then write",
                                  "detach_ under no_grad", "detach_ in inference mode"])
def test_a_saved_input_detached_in_place_refuses_every_pass(differential, dtype, when):
    def prog(torch, log):
        for name, fn in {**SAVES_INPUT, **SAVES_RESULT}.items():
            x = torch.tensor([[0.5, 1.5], [2.0, 0.25]], dtype=getattr(torch, dtype),
                             requires_grad=True)
            h = x * 2
            out = fn(h) * 1
            q = (x * 3).sum()                       # a pass that does not run the node
            if when == "write then detach_":
                h.add_(0.0)
            if when == "detach_ under no_grad":
                with torch.no_grad():
                    h.detach_()
            elif when == "detach_ in inference mode":     # leaves h as it was
                with torch.inference_mode():
                    h.detach_()
            else:
                h.detach_()
            if when == "detach_ then write":
                h.add_(0.0)
            log(f"{name} h", [h.requires_grad, h.is_leaf, h.grad_fn is None, h._version])
            log.attempt(f"{name} autograd.grad", lambda out=out, x=x: torch.autograd.grad(
                out.sum(), x, retain_graph=True))
            log.attempt(f"{name} backward", lambda out=out: out.sum().backward())
            log.attempt(f"{name} other pass", lambda q=q: q.backward())
            log(f"{name} x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("VER-16")
def test_leaves_hooks_custom_functions_and_new_graphs_are_outside_it(differential):
    def prog(torch, log):
        x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        w = torch.tensor([1.5, 2.0, -0.5], requires_grad=True)
        s = (x * w).sum()
        x.detach_()                                 # a saved leaf: no .grad for it
        log.attempt("leaf", lambda: s.backward())
        log("grads", [x.grad, w.grad])
        y = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
        h = y * 2
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda p: p):
            c = h.cos()
        g = y * 3
        m = g.sin()
        retained = m.sum()
        retained.backward(retain_graph=True)       # a first pass, before the detach_
        h.detach_()
        g.detach_()
        log.attempt("packed", lambda: c.sum().backward())
        log.attempt("second pass", lambda: retained.backward())
        log("y.grad", y.grad)
        k = h * y                                   # a graph made after: h is a constant
        k.sum().backward()
        log("after", y.grad)

        z = torch.tensor([1.0, -2.0], requires_grad=True)
        hz = z * 2
        sq = _square(torch).apply(hz)       # saves its input with ctx.save_for_backward
        hz.detach_()
        log.attempt("custom Function", lambda: sq.sum().backward())
        log("z.grad", z.grad)
        for name, write in (("mul_", lambda t, o: t.mul_(o)), ("div_", lambda t, o: t.div_(o)),
                            ("sin_", lambda t, o: t.sin_()), ("pow_", lambda t, o: t.pow_(2))):
            a = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
            o = torch.tensor([2.0, 4.0], dtype=torch.float64, requires_grad=True)
            t = a * 2
            write(t, o)                 # saves a copy of t's old value: outside VER-16
            total = t.sum()
            t.detach_()
            log.attempt(f"{name} copy", lambda total=total: total.backward())
            log(f"{name} grads", [a.grad, o.grad])
    differential(prog)
