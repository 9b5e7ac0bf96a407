"""Differential tests for graph recording: GRAPH-1 to GRAPH-10 (spec/graph.md).

Each program probes its clause from another angle than the spec example (float64, broadcasting,
other ops, views, loops) and logs names, flags and gradients so that torch and refimpl compare.
"""
import pytest


def names(node):
    """Names along next_functions of one node, None for an input that needs no gradient."""
    return [None if n is None else n.name() for n, _ in node.next_functions]


@pytest.mark.clause("GRAPH-1")
def test_one_operand_requiring_grad_is_enough(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64, requires_grad=True)
        c = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
        y = c - x                               # broadcast (4,) against (3, 1)
        log("y flags", [y.requires_grad, y.is_leaf, y.grad_fn is None])
        log("y shape", list(y.shape))
        m = torch.ones(2, 3, dtype=torch.float64) @ x.reshape(3)
        log("matmul flags", [m.requires_grad, m.is_leaf, m.grad_fn is None])
        z = c.sum() + x.mean()
        log("z flags", [z.requires_grad, z.is_leaf, z.grad_fn is None])
        for op in (lambda t: t.abs(), lambda t: t.t(), lambda t: t[1], lambda t: t.clone()):
            r = op(x)
            log("unary flags", [r.requires_grad, r.is_leaf, r.grad_fn is None])
    differential(prog)


@pytest.mark.clause("GRAPH-2")
def test_ops_without_grad_inputs_record_nothing(differential):
    def prog(torch, log):
        i = torch.arange(4) * 2 + 1
        log("int64 result", [i.requires_grad, i.is_leaf, i.grad_fn is None, i])
        a = torch.tensor([[0.5, -1.0], [2.0, 3.0]], dtype=torch.float64)
        r = (a.t() @ a).sigmoid().clamp(0.6, 0.9).mean(0)
        log("float64 chain", [r.requires_grad, r.is_leaf, r.grad_fn is None])
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        d = x.detach() * 3 + x.detach()[0]
        log("detached chain", [d.requires_grad, d.is_leaf, d.grad_fn is None, d])
        with torch.enable_grad():
            e = a.exp()
        log("under enable_grad", [e.requires_grad, e.grad_fn is None])
    differential(prog)


@pytest.mark.clause("GRAPH-3")
def test_grad_fn_names_table(differential):
    def prog(torch, log):
        a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64,
                         requires_grad=True)
        b = torch.tensor([[2.0, 1.0, 0.5], [1.0, 3.0, 2.0]], dtype=torch.float64)
        v = torch.tensor([1.0, -1.0], dtype=torch.float64, requires_grad=True)
        forms = {
            "a+b": lambda: a + b, "s+a": lambda: 2 + a, "a.add": lambda: a.add(b),
            "a-s": lambda: a - 1.5, "a.sub": lambda: a.sub(b), "s-a": lambda: 3 - a,
            "s*a": lambda: 0.5 * a, "a.mul": lambda: a.mul(b), "a/b": lambda: a / b,
            "a.div": lambda: a.div(2), "-a": lambda: -a, "a.neg": lambda: a.neg(),
            "a**s": lambda: a ** 3, "a.pow": lambda: a.pow(0.5), "exp": lambda: a.exp(),
            "log": lambda: a.log(), "sin": lambda: a.sin(), "cos": lambda: a.cos(),
            "tanh": lambda: a.tanh(), "sigmoid": lambda: a.sigmoid(), "relu": lambda: a.relu(),
            "abs": lambda: a.abs(), "clamp": lambda: a.clamp(1.0, 4.0),
            "clamp_min": lambda: a.clamp(min=2.0), "clamp_max": lambda: a.clamp(max=2.0),
            "mm": lambda: a @ b.t(), "mv": lambda: b.t() @ v, "dot": lambda: v @ v,
            "reshape": lambda: a.reshape(3, 2), "view": lambda: a.view(6), "t": lambda: a.t(),
            "transpose": lambda: a.transpose(1, 0), "unsqueeze": lambda: a.unsqueeze(1),
            "squeeze()": lambda: a.unsqueeze(0).squeeze(), "squeeze(d)": lambda: a.squeeze(0),
            "expand": lambda: a[0].expand(4, 3), "sum": lambda: a.sum(),
            "sum(d)": lambda: a.sum(1, keepdim=True), "mean": lambda: a.mean(),
            "mean(d)": lambda: a.mean(0), "select": lambda: a[-1], "slice": lambda: a[0:1],
            "slice step": lambda: a[::2], "clone": lambda: a.clone(),
        }
        for label, make in forms.items():
            log(label, make().grad_fn.name())
        r = 1 / a
        log("s/a inner", r.grad_fn.next_functions[0][0].name())
        vm = v @ a
        log("1-D@2-D", [vm.grad_fn.name(), vm.grad_fn.next_functions[0][0].name()])
    differential(prog)


@pytest.mark.clause("GRAPH-4")
def test_next_functions_order_and_arity(differential):
    def prog(torch, log):
        a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        c = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
        h = a.sin()
        for label, t in (("c@a", c @ a), ("a@c", a @ c), ("h/c", h / c), ("c/h", c / h),
                         ("h-a", h - a), ("a*h", a * h), ("c+c@a", c + c @ a)):
            log(label, names(t.grad_fn))
            log(label + " output numbers", [i for _, i in t.grad_fn.next_functions])
        log("unary arity", [len(t.grad_fn.next_functions)
                            for t in (h.exp(), a.t(), a.sum(), a[0], a.clone())])
        deep = (h * a).sum()
        log("two levels", [names(n) for n, _ in deep.grad_fn.next_functions])
    differential(prog)


@pytest.mark.clause("GRAPH-4")
@pytest.mark.clause("VIEW-9")
@pytest.mark.parametrize("op", ("unbind", "unbind dim 1", "split", "chunk", "split sizes"))
def test_the_output_number_of_an_operand_from_a_multi_output_op(differential, op):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64,
                         requires_grad=True)
        pieces = {"unbind": lambda: x.unbind(), "unbind dim 1": lambda: x.unbind(1),
                  "split": lambda: x.split(1, 1), "chunk": lambda: x.chunk(3, -1),
                  "split sizes": lambda: x.split([1, 1, 1], 1)}[op]()
        last, first = pieces[-1], pieces[0]
        for label, t in (("last * first", last * first), ("first + last", first + last),
                         ("last * last", last * last), ("a view of last", last[0:1] * first[0:1])):
            log(label, [(None if n is None else n.name(), i) for n, i in t.grad_fn.next_functions])
    differential(prog)


@pytest.mark.clause("GRAPH-5")
def test_accumulate_grad_nodes_for_leaves(differential):
    def prog(torch, log):
        w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        k = torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64)
        uses = [w.exp(), w[1:], w * k, k * w, w.unsqueeze(0)]
        for u in uses:
            log("edges", names(u.grad_fn))
        acc = (w * k).grad_fn.next_functions[0][0]
        log("acc", [acc.name(), len(acc.next_functions)])
        log("leaf grad_fn", [w.grad_fn is None, k.grad_fn is None])
        loss = sum(u.sum() for u in uses)
        loss.backward()
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("GRAPH-6")
def test_python_numbers_are_not_graph_inputs(differential):
    def prog(torch, log):
        x = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
        c = torch.tensor([2.0, 2.0, 2.0], dtype=torch.float64)
        forms = {
            "x.add(2.5)": lambda: x.add(2.5), "x - 1": lambda: x - 1,
            "x.mul(-1)": lambda: x.mul(-1),
            "x.div(4)": lambda: x.div(4), "5 + x": lambda: 5 + x, "0.5 * x": lambda: 0.5 * x,
            "3 - x": lambda: 3 - x, "1 / x": lambda: 1 / x, "x ** 3": lambda: x ** 3,
            "x.pow(2.0)": lambda: x.pow(2.0), "clamp(min)": lambda: x.clamp(min=0.0),
            "clamp(max)": lambda: x.clamp(max=1.0), "c / x": lambda: c / x,
            "x * c": lambda: x * c,
        }
        for label, make in forms.items():
            log(label, names(make().grad_fn))
        y = (3 - x) * (1 / x) + x.mul(-1) + 5
        y.sum().backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("GRAPH-7")
def test_every_forward_builds_its_own_graph(differential):
    def prog(torch, log):
        w = torch.tensor([1.5, -0.5], dtype=torch.float64, requires_grad=True)
        losses = []
        for i in range(3):
            loss = (w ** (i + 1)).sum()
            losses.append(loss)
            log(f"graph {i}", loss.grad_fn.next_functions[0][0].name())
        for i, loss in enumerate(losses):
            loss.backward()
            log(f"w.grad after {i}", w.grad)
        log.attempt("old graph again", lambda: losses[0].backward())
        again = (w ** 1).sum()
        log.attempt("fresh graph", lambda: again.backward())
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("GRAPH-8")
def test_loop_on_values_records_executed_iterations(differential):
    def prog(torch, log):
        for start in (3.0, 0.75, 25.0):
            x = torch.tensor(start, dtype=torch.float64, requires_grad=True)
            y, steps = x, 0
            while y.item() < 20:
                y = y * 2
                steps += 1
            chain, node = [], y.grad_fn
            while node is not None and node.name() != "torch::autograd::AccumulateGrad":
                chain.append(node.name())
                node = node.next_functions[0][0]
            log(f"steps from {start}", steps)
            log(f"chain from {start}", chain)
            if y.requires_grad and y.grad_fn is not None:
                y.backward()
                log(f"grad from {start}", x.grad)
            else:
                log(f"no graph from {start}", [y.is_leaf, x.grad is None])
    differential(prog)


@pytest.mark.clause("GRAPH-9")
def test_gradients_of_several_uses_add_up(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        y = (x[0] * x + x.t() + x @ x).sum()
        y.backward()
        log("x.grad", x.grad)
        z = torch.tensor([0.5, -1.0], requires_grad=True)
        h = z.exp()
        (h * h + h.sum() * h).sum().backward()
        log("z.grad", z.grad)
    differential(prog)


@pytest.mark.clause("GRAPH-10")
def test_view_results_scatter_back_to_base(differential):
    def prog(torch, log):
        base = torch.arange(12.0).reshape(3, 4).requires_grad_()
        views = {
            "t": lambda: base.t(), "transpose": lambda: base.transpose(0, 1),
            "unsqueeze": lambda: base.unsqueeze(2), "expand": lambda: base[1].expand(2, 4),
            "step slice": lambda: base[::2], "column": lambda: base.t()[1],
            "reshape": lambda: base.reshape(2, 6), "view": lambda: base.view(12)[3:7],
        }
        for label, make in views.items():
            v = make()
            log(label + " node", [v.is_leaf, v.grad_fn.name(), names(v.grad_fn)])
            base.grad = None
            (v * v).sum().backward()
            log(label + " base.grad", base.grad)
        plain = torch.ones(2, 3)
        log("view of plain tensor", [plain.t().grad_fn is None, plain[0].is_leaf])
    differential(prog)


@pytest.mark.clause("GRAPH-10")
def test_subscripts_of_several_items_record_a_node_per_slice_written_short_of_the_dim(
        differential):
    """torch 2.13 skips a slice of a subscript of several items (or of a 1-tuple) when it is
    written as the whole dim: start None or 0, step None or 1, stop None or past the end; a
    slice written otherwise (`-3:` of a size-3 dim) records SliceBackward0 even though it
    takes the whole dim, and a subscript left with nothing records AliasBackward0."""
    def prog(torch, log):
        for shape in ((3, 2), (1, 3), (2, 2)):
            a = torch.ones(*shape, requires_grad=True)
            n = shape[0]
            keys = {"(0:n+2,)": (slice(0, n + 2),), "(::1,)": (slice(None, None, 1),),
                    "(0::2,)": (slice(0, None, 2),), "(-n:,)": (slice(-n, None),),
                    "(:n,)": (slice(None, n),), "(:1,)": (slice(None, 1),),
                    "-n:n+2, 0:2": (slice(-n, n + 2), slice(0, 2)),
                    "0:, :": (slice(0, None), slice(None)), ":, 0": (slice(None), 0),
                    "-1:3, 1:3:3": (slice(-1, 3), slice(1, 3, 3)), "0:": slice(0, None)}
            for label, key in keys.items():
                v = a[key]
                log(f"{shape} a[{label}]", [v.grad_fn.name(), names(v.grad_fn)])
                a.grad = None
                (v * v).sum().backward()
                log(f"{shape} a[{label}] base.grad", a.grad)
    differential(prog)


# operand shapes whose inner sizes differ, through each path matmul takes: dot, mv, mm (1-D
# unsqueezed too), a batch folded into rows, bmm, and batches that cannot broadcast
MISMATCHED = (((3,), (2,)), ((0,), (2,)), ((2, 3), (2,)), ((2, 3), (0,)), ((3,), (2, 2)),
              ((2, 3), (2, 3)), ((2, 2, 3), (2, 3)), ((2, 2, 3), (2,)), ((3,), (2, 2, 2)),
              ((2, 3), (2, 2, 2)), ((2, 2, 3), (2, 2, 2)), ((2, 2, 3), (1, 2, 2)),
              ((1, 2, 3), (2, 2, 2)), ((2, 1, 2, 3), (3, 2, 2)), ((4, 2, 3), (3, 2, 2)),
              ((2, 2, 3), (3, 3, 2)))


@pytest.mark.clause("GRAPH-3")
@pytest.mark.clause("VER-12")
@pytest.mark.parametrize("needs_grad", ("neither", "first", "second"))
def test_matmul_of_mismatched_sizes_raises_torchs_runtime_error(differential, needs_grad):
    """matmul of operands whose inner sizes differ raises RuntimeError with the message of the
    kernel torch reaches (which depends on which operand requires grad, as folding does), not
    numpy's ValueError; no spec kind, so the message is compared as it is."""
    def prog(torch, log):
        for sa, sb in MISMATCHED:
            a = torch.ones(sa, requires_grad=needs_grad == "first")
            b = torch.ones(sb, requires_grad=needs_grad == "second")
            log.attempt(f"{sa} @ {sb}", lambda a=a, b=b: a @ b)
            log.attempt(f"matmul {sa} {sb}", lambda a=a, b=b: torch.matmul(a, b))
    differential(prog)


@pytest.mark.clause("GRAPH-3", "LEAF-15")
@pytest.mark.parametrize("shape", [(), (3,)])
def test_ops_torch_has_no_bool_version_of_refuse_bool_tensors(differential, shape):
    """Subtraction, negation and relu of a bool tensor are refused (RuntimeError: a mask is
    inverted with `~`), abs, floor, round and matmul have no bool kernel (NotImplementedError);
    clamp promotes with its bounds (an integer tensor clamped by floats is float32), and
    clamp_ refuses a promotion it cannot write back. No spec kinds: torch's own checks."""
    def prog(torch, log):
        values = [True, False, True] if shape else True
        b, x = torch.tensor(values), torch.tensor([1.0, 2.0, 3.0] if shape else 2.0,
                                                   requires_grad=True)
        i = torch.tensor([1, 2, 3] if shape else 2)
        ops = {"b - x": lambda: b - x, "x - b": lambda: x - b, "b - b": lambda: b - b,
               "1 - b": lambda: 1 - b, "b.sub(1)": lambda: b.sub(1), "-b": lambda: -b,
               "b.neg_()": lambda: b.clone().neg_(), "b.relu()": lambda: b.relu(),
               "b.abs()": lambda: b.abs(), "b.abs_()": lambda: b.clone().abs_(),
               "b.floor()": lambda: b.floor(), "b.round()": lambda: b.round(),
               "b.clamp(0, 1)": lambda: b.clamp(0, 1),
               "i.clamp(0.5, 1.5)": lambda: i.clamp(0.5, 1.5),
               "i.clamp(min=1)": lambda: i.clamp(min=1), "x.clamp(0, 2)": lambda: x.clamp(0, 2),
               "i.abs()": lambda: i.abs(), "i.relu()": lambda: i.relu()}
        if shape:
            ops.update({"b @ b": lambda: b @ b, "b mv": lambda: b.view(1, 3) @ b,
                        "b mm": lambda: b.view(1, 3) @ b.view(3, 1),
                        "b bmm": lambda: b.view(1, 1, 3) @ b.view(1, 3, 1)})
        for label, op in ops.items():
            r = log.attempt(label, op)
            if r is not None:
                log(label + " result", [str(r.dtype), r.tolist(), r.requires_grad])
        try:        # (torch words this cast error with C type names: "long int")
            i.clone().clamp_(0.5, 1.5)
            log("i.clamp_(0.5, 1.5)", "ok")
        except RuntimeError as exc:
            log("i.clamp_(0.5, 1.5)", str(exc).split(" to the desired")[0])
    differential(prog)


SHAPES = {(): 1, (3,): [1, 0, 2], (2, 2): [[1, 0], [2, 3]]}
DTYPES = ("int64", "float32", "float64", "bool")


def _isub(t, other):
    t -= other
    return t


@pytest.mark.clause("GRAPH-3")
@pytest.mark.parametrize("shape", list(SHAPES))
def test_subtraction_with_a_python_bool_is_refused_as_with_a_bool_tensor(differential, shape):
    """torch wraps a Python bool operand of `-` as a bool tensor, so subtracting True or False
    is refused whatever the tensor's dtype (a bool tensor with a Python bool is "two bool
    tensors"), in every form, with or without alpha; its refusal comes after alpha is parsed as
    a number and before alpha is checked against the result."""
    def prog(torch, log):
        for dt in DTYPES:
            t = torch.tensor(SHAPES[shape]).to(getattr(torch, dt))
            for s in (True, False, torch.tensor(True)):
                forms = {"t - s": lambda t=t, s=s: t - s, "s - t": lambda t=t, s=s: s - t,
                         "t.sub(s)": lambda t=t, s=s: t.sub(s),
                         "torch.sub(t, s)": lambda t=t, s=s: torch.sub(t, s),
                         "t.sub_(s)": lambda t=t, s=s: t.clone().sub_(s),
                         "t -= s": lambda t=t, s=s: _isub(t.clone(), s)}
                for alpha in (1, 2, True, 1.5, None):
                    forms[f"t.sub(s, alpha={alpha})"] = lambda t=t, s=s, a=alpha: t.sub(s, alpha=a)
                    forms[f"t.sub_(s, alpha={alpha})"] = (
                        lambda t=t, s=s, a=alpha: t.clone().sub_(s, alpha=a))
                for label, form in forms.items():
                    r = log.attempt(f"{dt} {s!r}: {label}", form)
                    if r is not None:
                        log(f"{dt} {s!r}: {label} result", [str(r.dtype), r.tolist()])
    differential(prog)


@pytest.mark.clause("GRAPH-3")
@pytest.mark.parametrize("shape", [*SHAPES, (0,), (2, 0)])
def test_integers_to_a_negative_integer_power_are_refused(differential, shape):
    """An int64 or bool tensor to a negative integer power is refused (RuntimeError: torch
    checks the exponent, so an empty tensor is refused too), in every form and in place before
    the memory written is checked; a float exponent, a non-negative one or a float tensor
    computes. No spec kind: torch's own check, so the message is compared."""
    def prog(torch, log):
        data = SHAPES.get(shape) if shape in SHAPES else torch.zeros(shape).tolist()
        for dt in DTYPES:
            t = torch.tensor(data, dtype=torch.float32).to(getattr(torch, dt))
            for e in (-1, -2, 0, 2, -1.0, -0.5):
                forms = {"t ** e": lambda t=t, e=e: t ** e, "t.pow(e)": lambda t=t, e=e: t.pow(e),
                         "torch.pow(t, e)": lambda t=t, e=e: torch.pow(t, e),
                         "t.pow_(e)": lambda t=t, e=e: t.clone().pow_(e),
                         "expanded pow_(e)": lambda t=t, e=e: t.reshape(-1)[:1].expand(2)
                         .pow_(e)}
                for label, form in forms.items():
                    r = log.attempt(f"{dt} {label} {e}", form)
                    if r is not None:
                        log(f"{dt} {label} {e} result", [str(r.dtype), r.tolist()])
    differential(prog)
