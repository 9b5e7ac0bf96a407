"""Differential tests for the order of everything that runs for one node (HOOK-18), hooks added
and removed while a pass runs (HOOK-6), multi-grad hooks (HOOK-19, HOOK-20) and what is left
open about them (UNSPEC-14, UNSPEC-15).

Every hook appends to one list, which is logged once the pass is over, so that the order of the
calls, their arguments and their count are compared at once; torch's log is the expected one.
"""
import pytest

DTYPES = ("float32", "float64")
SHAPES = ((), (3,), (2, 3))


def _leaf(torch, shape, dtype, start=1.0, step=0.5):
    """A leaf that requires grad, of `shape` and `dtype`, holding start, start + step, ..."""
    n = 1
    for d in shape:
        n *= d
    flat = [start + step * i for i in range(n)]

    def nest(vals, dims):
        if not dims:
            return vals[0]
        k = len(vals) // dims[0]
        return [nest(vals[i * k:(i + 1) * k], dims[1:]) for i in range(dims[0])]
    return torch.tensor(nest(flat, list(shape)), dtype=getattr(torch, dtype), requires_grad=True)


def _acc(t):
    """The AccumulateGrad node of the leaf t (GRAPH-5), through a node t feeds."""
    return (t * 1).grad_fn.next_functions[0][0]


def _plain(g):
    return None if g is None else g.tolist()


def _every_kind(torch, calls, x, h):
    """Hooks of every kind on non-leaf h = f(x) and on leaf x, registered in an order that is
    not the order they run in (HOOK-18), each appending what it sees to `calls`."""
    acc = h.grad_fn.next_functions[0][0]
    acc.register_hook(lambda gi, go: calls.append(("acc post", gi, _plain(go[0]),
                                                    _plain(x.grad))))
    h.grad_fn.register_hook(lambda gi, go: calls.append(
        ("h post", [_plain(g) for g in gi], _plain(go[0]))))
    x.register_post_accumulate_grad_hook(lambda t: calls.append(("x post accumulate",
                                                                 t is x, _plain(t.grad))))
    acc.register_prehook(lambda go: calls.append(("acc pre", _plain(go[0]), _plain(x.grad))))
    h.grad_fn.register_prehook(lambda go: calls.append(("h pre", _plain(go[0]),
                                                        _plain(h.grad))))
    x.register_hook(lambda g: calls.append(("x hook 1", _plain(g), _plain(x.grad))))
    h.retain_grad()
    h.register_hook(lambda g: calls.append(("h hook 1", _plain(g), _plain(h.grad))))
    x.register_hook(lambda g: calls.append(("x hook 2", _plain(g))))
    h.register_hook(lambda g: calls.append(("h hook 2", _plain(g))))
    return acc


# ---- HOOK-18: the order of the steps of one node -----------------------------------------

@pytest.mark.clause("HOOK-18")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_kind_of_hook_runs_in_the_table_order_under_backward(differential, dtype, shape):
    def prog(torch, log):
        x = _leaf(torch, shape, dtype)
        h = x.exp()
        calls = []
        _every_kind(torch, calls, x, h)
        (h * h).sum().backward()
        log("calls", calls)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-18")
@pytest.mark.parametrize("dtype", DTYPES)
def test_each_step_sees_what_the_steps_before_it_left(differential, dtype):
    def prog(torch, log):
        x = _leaf(torch, (2,), dtype)
        h = x * 3
        calls = []
        acc = h.grad_fn.next_functions[0][0]
        h.register_hook(lambda g: g + 1)
        h.retain_grad()
        h.grad_fn.register_prehook(lambda go: calls.append(("h pre", _plain(go[0]))) or
                                   (go[0] * 10,))
        h.grad_fn.register_hook(lambda gi, go: calls.append(
            ("h post", _plain(gi[0]), _plain(go[0]))) or (gi[0] - 1, *gi[1:]))
        x.register_hook(lambda g: calls.append(("x hook", _plain(g))) or g * 2)
        acc.register_prehook(lambda go: calls.append(("acc pre", _plain(go[0]))) or
                             (go[0] + 100,))
        x.register_post_accumulate_grad_hook(lambda t: calls.append(("post acc",
                                                                     _plain(t.grad))))
        acc.register_hook(lambda gi, go: calls.append(("acc post", _plain(go[0]))))
        h.sum().backward()
        log("calls", calls)
        log("h.grad (before the pre-hook)", h.grad)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-18")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ((2,), (2, 2)))
def test_all_steps_of_a_node_come_before_the_next_node(differential, dtype, shape):
    def prog(torch, log):
        xs = [_leaf(torch, shape, dtype, start=s) for s in (1.0, 2.0)]
        hs = [xs[0].sin(), xs[1] * xs[0]]
        calls = []
        for name, t in (("x0", xs[0]), ("x1", xs[1])):
            acc = _acc(t)
            acc.register_prehook(lambda go, name=name: calls.append(name + " pre"))
            acc.register_hook(lambda gi, go, name=name: calls.append(name + " post"))
            t.register_post_accumulate_grad_hook(lambda t, name=name: calls.append(
                name + " post accumulate"))
            t.register_hook(lambda g, name=name: calls.append(name + " hook"))
        for name, t in (("h0", hs[0]), ("h1", hs[1])):
            t.grad_fn.register_hook(lambda gi, go, name=name: calls.append(name + " post"))
            t.grad_fn.register_prehook(lambda go, name=name: calls.append(name + " pre"))
            t.register_hook(lambda g, name=name: calls.append(name + " hook"))
        (hs[0] * hs[1]).sum().backward()
        log("calls", calls)
        log("grads", [x.grad for x in xs])
    differential(prog)


@pytest.mark.clause("HOOK-18")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("inputs", ("x", "h", "h and x"))
def test_autograd_grad_makes_the_steps_of_the_table(differential, dtype, inputs):
    def prog(torch, log):
        x = _leaf(torch, (2,), dtype)
        h = x.exp()
        calls = []
        _every_kind(torch, calls, x, h)
        y = (h * h).sum()
        wanted = {"x": [x], "h": [h], "h and x": [h, x]}[inputs]
        log("returned", torch.autograd.grad(y, wanted))
        log("calls", calls)
        log("h.grad", h.grad)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-18")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("inputs", ("x", "h", "h and x", "w"))
def test_backward_with_inputs_makes_the_steps_of_the_table(differential, dtype, inputs):
    def prog(torch, log):
        x = _leaf(torch, (2, 2), dtype)
        w = _leaf(torch, (2, 2), dtype, start=-1.0)
        h = x.exp()
        calls = []
        _every_kind(torch, calls, x, h)
        y = (h @ w).sum()
        wanted = {"x": [x], "h": [h], "h and x": [h, x], "w": [w]}[inputs]
        y.backward(inputs=wanted)
        log("calls", calls)
        log("grads", [h.grad, x.grad, w.grad])
    differential(prog)


@pytest.mark.clause("HOOK-18")
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_frozen_leaf_still_has_its_steps(differential, dtype):
    def prog(torch, log):
        x = _leaf(torch, (3,), dtype)
        h = x * 2
        calls = []
        _every_kind(torch, calls, x, h)
        y = (h * h).sum()
        x.requires_grad_(False)          # LEAF-16: no accumulation, every hook still runs
        y.backward()
        log("calls", calls)
        log("x.grad", x.grad)
    differential(prog)


# ---- HOOK-6: hooks removed and added while a pass runs ------------------------------------

def _set_of(kind, x, h):
    """register(fn1) for one set of hooks of HOOK-6, and a call that runs it; fn1 takes no
    argument (each hook kind's arguments are dropped)."""
    acc = _acc(x)
    make = {
        "non-leaf tensor hooks": lambda f: h.register_hook(lambda g: f()),
        "leaf tensor hooks": lambda f: x.register_hook(lambda g: f()),
        "node pre-hooks": lambda f: h.grad_fn.register_prehook(lambda go: f()),
        "node post hooks": lambda f: h.grad_fn.register_hook(lambda gi, go: f()),
        "AccumulateGrad pre-hooks": lambda f: acc.register_prehook(lambda go: f()),
        "post-accumulate-grad hooks": lambda f: x.register_post_accumulate_grad_hook(
            lambda t: f()),
    }[kind]
    return make, acc


SETS = ("non-leaf tensor hooks", "leaf tensor hooks", "node pre-hooks", "node post hooks",
        "AccumulateGrad pre-hooks", "post-accumulate-grad hooks")


@pytest.mark.clause("HOOK-6")
@pytest.mark.parametrize("kind", SETS)
def test_a_hook_removed_by_an_earlier_hook_of_its_set_still_runs_in_that_pass(differential,
                                                                              kind):
    def prog(torch, log):
        x = _leaf(torch, (2,), "float32")
        h = x * 2
        register, acc = _set_of(kind, x, h)
        calls, handles = [], {}
        handles["a"] = register(lambda: calls.append("a") or handles["b"].remove())
        handles["b"] = register(lambda: calls.append("b"))
        y = (h * 3).sum()
        for _ in range(2):
            y.backward(retain_graph=True)
            calls.append("|")
        log("calls", calls)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-6")
@pytest.mark.parametrize("kind", SETS)
def test_a_hook_that_removes_itself_runs_in_that_pass_only(differential, kind):
    def prog(torch, log):
        x = _leaf(torch, (2, 2), "float64")
        h = x.sin()
        register, acc = _set_of(kind, x, h)
        calls, handles = [], {}
        handles["a"] = register(lambda: calls.append("a") or handles["a"].remove())
        handles["b"] = register(lambda: calls.append("b"))
        y = h.sum()
        for _ in range(2):
            y.backward(retain_graph=True)
            calls.append("|")
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("HOOK-6")
@pytest.mark.parametrize("kind", SETS)
def test_a_hook_added_to_its_own_set_runs_from_the_next_pass(differential, kind):
    def prog(torch, log):
        x = _leaf(torch, (3,), "float32")
        h = x * x
        register, acc = _set_of(kind, x, h)
        calls, added = [], []

        def first():
            calls.append("a")
            if not added:
                added.append(register(lambda: calls.append("added")))
        register(first)
        register(lambda: calls.append("b"))
        y = h.sum()
        for _ in range(2):
            y.backward(retain_graph=True)
            calls.append("|")
        log("calls", calls)
    differential(prog)


# (what registers, the set it registers into): each set is read after the first hook ran
LATER_SETS = {
    "h's tensor hook adds a pre-hook of h's node": (
        "non-leaf tensor hooks", "node pre-hooks"),
    "h's tensor hook adds a hook of x": ("non-leaf tensor hooks", "leaf tensor hooks"),
    "h's post hook adds a post-accumulate-grad hook of x": (
        "node post hooks", "post-accumulate-grad hooks"),
    "x's hook adds a pre-hook of its AccumulateGrad": (
        "leaf tensor hooks", "AccumulateGrad pre-hooks"),
    "x's hook adds a post-accumulate-grad hook": (
        "leaf tensor hooks", "post-accumulate-grad hooks"),
}


@pytest.mark.clause("HOOK-6")
@pytest.mark.parametrize("case", list(LATER_SETS))
def test_a_hook_added_to_a_set_not_read_yet_runs_in_that_pass(differential, case):
    def prog(torch, log):
        x = _leaf(torch, (2,), "float64")
        h = x.exp()
        adder, target = LATER_SETS[case]
        register_adder, acc = _set_of(adder, x, h)
        register_target, _ = _set_of(target, x, h)
        calls, added = [], []

        def add():
            calls.append("adder")
            if not added:
                added.append(register_target(lambda: calls.append("added")))
        register_adder(add)
        y = h.sum()
        for _ in range(2):
            y.backward(retain_graph=True)
            calls.append("|")
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("HOOK-6")
@pytest.mark.parametrize("case", list(LATER_SETS))
def test_a_hook_removed_from_a_set_not_read_yet_does_not_run(differential, case):
    def prog(torch, log):
        x = _leaf(torch, (2,), "float32")
        h = x.exp()
        remover, target = LATER_SETS[case]
        register_remover, acc = _set_of(remover, x, h)
        register_target, _ = _set_of(target, x, h)
        calls, handles = [], {}
        register_remover(lambda: calls.append("remover") or handles["t"].remove())
        handles["t"] = register_target(lambda: calls.append("removed"))
        h.sum().backward()
        log("calls", calls)
    differential(prog)


# ---- HOOK-19: register_multi_grad_hook, mode "all" ----------------------------------------

def _grads_logger(calls, tag="all"):
    return lambda grads: calls.append((tag, type(grads).__name__, [_plain(g) for g in grads]))


def _chain(torch, dtype, shape):
    """x, w leaves; a = 2 x; b = a * w; c = 5 x, off the path of b."""
    x = _leaf(torch, shape, dtype)
    w = _leaf(torch, shape, dtype, start=3.0)
    a = x * 2
    return x, w, a, a * w, x * 5


@pytest.mark.clause("HOOK-19")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_all_mode_is_called_once_with_every_gradient_and_none_off_the_path(differential, dtype,
                                                                           shape):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, dtype, shape)
        calls = []
        torch.autograd.graph.register_multi_grad_hook((x, a, c, w), _grads_logger(calls))
        b.sum().backward()
        log("calls", calls)
        log("grads", [x.grad, w.grad])
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.parametrize("dtype", DTYPES)
def test_all_mode_runs_at_its_place_among_the_last_tensors_hooks(differential, dtype):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, dtype, (2,))
        calls = []
        for name, t in (("x", x), ("a", a), ("w", w)):
            t.register_hook(lambda g, name=name: calls.append(name + " before"))
        a.retain_grad()
        a.grad_fn.register_prehook(lambda go: calls.append("a pre"))
        torch.autograd.graph.register_multi_grad_hook((w, a, x), _grads_logger(calls))
        for name, t in (("x", x), ("a", a), ("w", w)):
            t.register_hook(lambda g, name=name: calls.append(name + " after"))
        _acc(x).register_prehook(lambda go: calls.append("x acc pre"))
        b.sum().backward()
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.parametrize("dtype", DTYPES)
def test_all_mode_gets_each_gradient_as_the_earlier_hooks_left_it(differential, dtype):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, dtype, (2, 2))
        calls = []
        a.register_hook(lambda g: g + 1)
        x.register_hook(lambda g: g * 10)
        torch.autograd.graph.register_multi_grad_hook((a, x), _grads_logger(calls))
        a.register_hook(lambda g: g * 100)
        x.register_hook(lambda g: g - 1)
        b.sum().backward()
        log("calls", calls)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.parametrize("inputs", ("x", "w", "a", "x and w"))
def test_all_mode_under_backward_with_inputs_waits_only_for_nodes_that_run(differential, inputs):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float64", (3,))
        calls = []
        torch.autograd.graph.register_multi_grad_hook((x, a, c, w), _grads_logger(calls))
        wanted = {"x": [x], "w": [w], "a": [a], "x and w": [x, w]}[inputs]
        b.sum().backward(inputs=wanted)
        log("calls", calls)
        log("grads", [x.grad, w.grad])
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.parametrize("inputs", ("a", "x", "w", "a and x"))
def test_all_mode_under_autograd_grad_counts_non_leaf_inputs(differential, inputs):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float32", (2,))
        h = a.exp()
        y = (h * w).sum()
        calls = []
        torch.autograd.graph.register_multi_grad_hook((a, h), _grads_logger(calls))
        wanted = {"a": [a], "x": [x], "w": [w], "a and x": [a, x]}[inputs]
        log("returned", torch.autograd.grad(y, wanted))
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("HOOK-19")
def test_all_mode_is_not_called_when_no_tensor_counts(differential):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float32", (2,))
        calls = []
        torch.autograd.graph.register_multi_grad_hook((c,), _grads_logger(calls))
        torch.autograd.graph.register_multi_grad_hook((x, a), _grads_logger(calls, "x a"))
        b.sum().backward(inputs=[w])
        log("calls", calls)
        torch.autograd.graph.register_multi_grad_hook((), _grads_logger(calls, "empty"))
        b2 = a * w
        b2.sum().backward()
        log("calls after", calls)
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.parametrize("dtype", DTYPES)
def test_all_mode_return_value_replaces_nothing(differential, dtype):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, dtype, (2,))
        torch.autograd.graph.register_multi_grad_hook(
            (a, x), lambda grads: [torch.zeros_like(g) for g in grads])
        b.sum().backward()
        log("grads", [x.grad, w.grad])
    differential(prog)


@pytest.mark.clause("HOOK-19")
def test_all_mode_handle_removes_every_tensor_hook_and_may_be_removed_twice(differential):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float64", (2,))
        calls = []
        handle = torch.autograd.graph.register_multi_grad_hook((x, a, w), _grads_logger(calls))
        y = b.sum()
        y.backward(retain_graph=True)
        handle.remove()
        log.attempt("second remove", lambda: handle.remove())
        y.backward()
        log("calls", calls)
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.clause("HOOK-6")
def test_all_mode_removed_halfway_through_a_pass_is_not_called(differential):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float32", (2,))
        calls, handles = [], {}
        a.register_hook(lambda g: calls.append("a") or handles["m"].remove())
        handles["m"] = torch.autograd.graph.register_multi_grad_hook((a, x), _grads_logger(calls))
        y = b.sum()
        y.backward(retain_graph=True)
        y.backward()
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.clause("HOOK-6")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("remover", ["a after it", "x before it", "x after it", "w"])
def test_all_mode_removed_after_some_of_its_hooks_ran(differential, dtype, remover):
    """Removed by a hook of a (whose inner hook already ran: x's is not called, nor fn), by a
    hook of x registered before or after the inner hook of x (x's set is being called: both
    run, fn is called), or by w's hook (w's node runs before or after the others)."""
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, dtype, (2,))
        calls, handles = [], {}

        def remove(name):
            return lambda g: calls.append(name + " removes") or handles["m"].remove()
        if remover == "x before it":
            x.register_hook(remove("x"))
        handles["m"] = torch.autograd.graph.register_multi_grad_hook((a, x, w),
                                                                     _grads_logger(calls))
        if remover == "a after it":
            a.register_hook(remove("a"))
        elif remover == "x after it":
            x.register_hook(remove("x"))
        elif remover == "w":
            w.register_hook(remove("w"))
        y = b.sum()
        y.backward(retain_graph=True)
        calls.append("|")
        y.backward()
        log("calls", calls)
        log("grads", [x.grad, w.grad])
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.clause("HOOK-17")
def test_all_mode_with_a_tensor_twice_and_an_undefined_gradient(differential):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float64", (2,))
        b.grad_fn.register_hook(lambda gi, go: (None, gi[1]))   # a gets no gradient
        calls = []
        torch.autograd.graph.register_multi_grad_hook((x, a, w, x), _grads_logger(calls))
        b.sum().backward()
        log("calls", calls)
        log("grads", [x.grad, w.grad])
    differential(prog)


@pytest.mark.clause("HOOK-19")
@pytest.mark.parametrize("dtype", DTYPES)
def test_all_mode_is_called_in_each_pass_with_that_pass_gradients(differential, dtype):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, dtype, (2,))
        calls = []
        torch.autograd.graph.register_multi_grad_hook((x, w), _grads_logger(calls))
        y = b.sum()
        y.backward(retain_graph=True)
        (b * 3).sum().backward(retain_graph=True)
        torch.autograd.backward([c.sum(), y])
        log("calls", calls)
    differential(prog)


# ---- HOOK-20: register_multi_grad_hook, mode "any" ----------------------------------------

@pytest.mark.clause("HOOK-20")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_any_mode_is_called_once_with_the_first_gradient(differential, dtype, shape):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, dtype, shape)
        calls = []
        torch.autograd.graph.register_multi_grad_hook(
            (x, a, w), lambda g: calls.append(("any", _plain(g))), mode="any")
        for name, t in (("x", x), ("a", a), ("w", w)):
            t.register_hook(lambda g, name=name: calls.append(name))
        b.sum().backward()
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("HOOK-20")
@pytest.mark.parametrize("call", ("grad x", "grad w", "grad a", "backward inputs w",
                                  "backward inputs x"))
def test_any_mode_under_autograd_grad_and_backward_inputs(differential, call):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float64", (2,))
        calls = []
        torch.autograd.graph.register_multi_grad_hook(
            (x, a), lambda g: calls.append(("any", _plain(g))), mode="any")
        torch.autograd.graph.register_multi_grad_hook(
            (w, c), lambda g: calls.append(("w or c", _plain(g))), mode="any")
        y = b.sum() + c.sum()
        if call.startswith("grad"):
            t = {"grad x": x, "grad w": w, "grad a": a}[call]
            log("returned", torch.autograd.grad(y, t))
        else:
            y.backward(inputs=[w] if call.endswith("w") else [x])
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("HOOK-20")
def test_any_mode_ignores_tensors_that_do_not_require_grad(differential):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float32", (2,))
        n = torch.ones(2)
        calls = []
        torch.autograd.graph.register_multi_grad_hook(
            (n, w, a), lambda g: calls.append(_plain(g)), mode="any")
        b.sum().backward()
        log("calls", calls)
    differential(prog)


@pytest.mark.clause("HOOK-20")
@pytest.mark.parametrize("dtype", DTYPES)
def test_any_mode_return_value_is_ignored_and_removal_stops_it(differential, dtype):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, dtype, (2,))
        calls = []
        handle = torch.autograd.graph.register_multi_grad_hook(
            (a, x), lambda g: calls.append(_plain(g)) or g * 0, mode="any")
        y = b.sum()
        y.backward(retain_graph=True)
        y.backward(retain_graph=True)
        handle.remove()
        handle.remove()
        y.backward()
        log("calls", calls)
        log("x.grad", x.grad)
    differential(prog)


# ---- UNSPEC-14 and UNSPEC-15: only what they leave fixed is logged ------------------------

@pytest.mark.clause("UNSPEC-14")
def test_after_open_multi_grad_cases_the_specified_calls_hold(differential):
    def prog(torch, log):
        x, w, a, b, c = _chain(torch, "float64", (2,))
        calls = []
        torch.autograd.graph.register_multi_grad_hook((a, x), _grads_logger(calls))
        a.backward(torch.ones_like(a), retain_graph=True)    # starts from a: open
        try:
            torch.autograd.grad(b.sum(), [x], retain_graph=True)   # a leaf input: open
        except RuntimeError:
            pass
        calls.clear()
        torch.autograd.backward([b.sum(), c.sum()])         # two outputs: specified
        log("calls", calls)
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("UNSPEC-15")
def test_a_held_accumulate_grad_keeps_its_hooks_across_graphs(differential):
    def prog(torch, log):
        x = _leaf(torch, (2,), "float32")
        calls = []
        acc = _acc(x)
        acc.register_prehook(lambda go: calls.append(("pre", _plain(go[0]))))
        acc.register_hook(lambda gi, go: calls.append("post"))
        (x * 2).sum().backward()
        y = x.exp()                          # recorded while the program holds acc
        del acc
        y.sum().backward(retain_graph=True)  # the graph holds it now
        (x * x).sum().backward()             # recorded while y's graph holds it
        log("calls", calls)
        log("x.grad", x.grad)
    differential(prog)
