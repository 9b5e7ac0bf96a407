"""Differential tests for in-place operations: INPLACE-1 to INPLACE-14 (spec/inplace.md).

Each program probes its clause from another angle than the spec example (float64, 2-D shapes,
other in-place ops, views, repeated writes) and logs values, flags, versions and error kinds.
"""
import pytest


def f64(torch, rows, requires_grad=False):
    return torch.tensor(rows, dtype=torch.float64, requires_grad=requires_grad)


def state(t):
    return [t, t._version, t.is_leaf, t.requires_grad, t.grad_fn is None]


@pytest.mark.clause("INPLACE-1")
def test_every_inplace_method_on_a_grad_leaf_raises(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        ops = {
            "mul_": lambda: w.mul_(2.0), "sub_ tensor": lambda: w.sub_(torch.ones(2)),
            "div_": lambda: w.div_(2.0), "neg_": lambda: w.neg_(), "exp_": lambda: w.exp_(),
            "clamp_": lambda: w.clamp_(0.0, 1.0), "relu_": lambda: w.relu_(),
            "fill_": lambda: w.fill_(0.0), "copy_": lambda: w.copy_(torch.zeros(2, 2)),
            "pow_": lambda: w.pow_(2),
        }
        for label, op in ops.items():
            log.attempt(label, op)
        log("w unchanged", state(w))
        w.requires_grad_(False)
        log.attempt("same tensor after requires_grad_(False)", lambda: w.mul_(2.0))
        log("w", state(w))
    differential(prog)


@pytest.mark.clause("INPLACE-2")
def test_writes_through_any_view_of_a_grad_leaf_raise(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        views = {
            "view": lambda: w.view(6), "transpose": lambda: w.transpose(0, 1),
            "unsqueeze": lambda: w.unsqueeze(0), "column": lambda: w[:, 1],
            "view of view": lambda: w[1].unsqueeze(0)[0, 1:], "full getitem": lambda: w[:],
        }
        for label, make in views.items():
            v = make()
            log.attempt(label + " add_", lambda v=v: v.add_(1.0))
            log.attempt(label + " +=", lambda v=v: v.__iadd__(1.0))
        log("w unchanged", state(w))
    differential(prog)


@pytest.mark.clause("INPLACE-3")
def test_setitem_kind_depends_on_whether_the_index_covers_the_tensor(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        idx = {
            "[:]": slice(None), "[0:2]": slice(0, 2), "[:, :]": (slice(None), slice(None)),
            "[::1, 0:3]": (slice(None, None, 1), slice(0, 3)), "[0]": 0, "[:, 0]": (slice(None), 0),
            "[1:]": slice(1, None), "[:, ::2]": (slice(None), slice(None, None, 2)),
            "[-1, -1]": (-1, -1),
        }
        for label, i in idx.items():
            log.attempt("w" + label + " = 0", lambda i=i: w.__setitem__(i, 0.0))
        log.attempt("tensor value", lambda: w.__setitem__(0, torch.ones(3, dtype=torch.float64)))
        log("w unchanged", state(w))
    differential(prog)


@pytest.mark.clause("INPLACE-4")
def test_no_grad_writes_keep_the_leaf(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        for step in range(3):          # an SGD-style loop
            loss = (w * w).sum()
            loss.backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
                w[0, 0] = 1.0
            w.grad = None
            log(f"step {step}", state(w))
        with torch.set_grad_enabled(False):
            w.t().mul_(2.0)
        log("view write under set_grad_enabled(False)", state(w))
    differential(prog)


@pytest.mark.clause("INPLACE-5")
def test_data_writes_keep_the_leaf_and_go_unchecked(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        w.data[0] = 10.0
        w.data.t().mul_(0.5)
        log("w", state(w))
        y = (w ** 3).sum()
        w.data.zero_()            # after use: not caught, the gradient reads zeros
        log.attempt("backward", lambda: y.backward())
        log("w.grad", w.grad)
        h = w * 2
        h.data.fill_(1.0)
        log("non-leaf h", state(h))
    differential(prog)


@pytest.mark.clause("INPLACE-6")
def test_detach_writes_keep_the_leaf_and_are_checked(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        w.detach()[1].fill_(-1.0)
        log("w", state(w))
        y = (w * 3).sum()          # saves only the number 3: the write below is harmless
        z = w.sin().sum()          # saves w
        w.detach().mul_(2.0)
        log("w after", state(w))
        log.attempt("backward mul by number", lambda: y.backward())
        log("w.grad", w.grad)
        log.attempt("backward sin", lambda: z.backward())
    differential(prog)


@pytest.mark.clause("INPLACE-7")
def test_each_inplace_op_becomes_the_new_grad_fn(differential):
    def prog(torch, log):
        x = f64(torch, [0.5, 1.5], requires_grad=True)
        y = x * 1
        names = [y.grad_fn.name()]
        for op in (lambda: y.add_(1.0), lambda: y.sin_(), lambda: y.mul_(x),
                   lambda: y.div_(3.0), lambda: y.abs_()):
            op()
            names.append(y.grad_fn.name())
        log("names", names)
        log("chain", y.grad_fn.next_functions[0][0].name())
        log("flags", [y.is_leaf, y._version])
        y.sum().backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("INPLACE-8")
def test_view_writes_rewrite_the_base_history(differential):
    def prog(torch, log):
        x = f64(torch, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        y = x * 1
        y.t()[2].sin_()            # the last column of y
        y[0].mul_(f64(torch, [2.0, 3.0, 4.0]))   # the first row
        log("base", [y, y._version, y.grad_fn.name()])
        (y * y).sum().backward()
        log("x.grad", x.grad)
        z = x * 1
        z[0].mul_(z[1].detach())   # the saved factor aliases z, and the write moves its version
        log.attempt("factor aliasing the written tensor", lambda: z.sum().backward())
        x2 = f64(torch, [1.0, 2.0], requires_grad=True)
        b = (x2 * 1).unsqueeze(0).expand(1, 2)
        b.squeeze(0).add_(x2)      # write through a view of a view
        b.sum().backward()
        log("x2.grad", x2.grad)
    differential(prog)


@pytest.mark.clause("INPLACE-9")
def test_setitem_variants_on_non_leaves(differential):
    def prog(torch, log):
        x = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = f64(torch, [10.0, 20.0], requires_grad=True)
        y = x * 2
        alias = y
        y[0] = v                   # a tensor that requires grad
        y[1, 0] = 0.0
        y[:, 0] = y[:, 1] * 3      # reads the new values
        log("alias", [alias, alias._version])
        (y * y).sum().backward()
        log("grads", [x.grad, v.grad])
        z = x * 1
        z[:] = 5.0                 # whole-tensor write on a non-leaf
        z.sum().backward()
        log("x.grad after whole write", x.grad)
    differential(prog)


@pytest.mark.clause("INPLACE-10")
def test_plain_tensors_pick_up_history_from_written_values(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        acc = torch.zeros(2, 2, dtype=torch.float64)
        log("before", state(acc))
        acc.add_(w * w)
        log("after add_", [acc.requires_grad, acc.is_leaf])
        acc.mul_(2.0)
        rows = torch.zeros(3, 2, dtype=torch.float64)
        rows[1] = w[0]
        rows.t()[:, 2].copy_(w[1])   # through a view of the plain tensor
        log("rows", [rows, rows.requires_grad, rows.is_leaf])
        (acc.sum() + (rows * rows).sum()).backward()
        log("w.grad", w.grad)
        with torch.no_grad():
            quiet = torch.zeros(2, dtype=torch.float64)
            quiet[0] = w[0, 0]
        log("quiet", state(quiet))
    differential(prog)


@pytest.mark.clause("INPLACE-10", "MODE-9", "VIEW-7", "INFER-7")
@pytest.mark.parametrize("target", ["int64", "bool"])
def test_a_copy_into_an_integer_tensor_casts_and_records_nothing(differential, target):
    """copy_ and setitem of a value that requires grad into an integer or bool tensor cast the
    values: the tensor stays a leaf that does not require grad, and a graph computed from it
    has nothing to differentiate, and a view of one taken under no_grad or from a split is
    written, not refused; fill_ with a 0-d value that requires grad records FillBackward3, and
    a setitem of one into a part with a dimension goes through fill_ (torch 2.13's
    exceptions, kept)."""
    def prog(torch, log):
        dt = getattr(torch, target)
        normal = torch.zeros(3, dtype=dt)     # made outside inference mode
        for wdt in (torch.float32, torch.float64):
            w = torch.tensor([1.5, 2.5], dtype=wdt, requires_grad=True)
            writes = {"setitem of a slice": lambda b, w=w: b.__setitem__(slice(1, None), w),
                      "setitem of an element": lambda b, w=w: b.__setitem__(0, w[0]),
                      "copy_ into a view": lambda b, w=w: b[1:].copy_(w),
                      "copy_ into the whole": lambda b, w=w: b.copy_(w.sum() * 1)}
            for name, write in writes.items():
                b = torch.zeros(3, dtype=dt)
                write(b)
                log(f"{wdt} {name}", [b.requires_grad, b.is_leaf, b.grad_fn is None, b])
                r = b.to(wdt) * 2
                log.attempt(f"{wdt} {name}: backward", lambda r=r: r.sum().backward())
            b = torch.zeros(3, dtype=dt)
            b.fill_(w[0])
            log(f"{wdt} fill_", [b.requires_grad, b.grad_fn.name(), b])
            for index in (0, slice(1, 2), slice(1, None), Ellipsis):    # a 0-d value: fill_
                b = torch.zeros(3, dtype=dt)                            # where the part has
                b[index] = w[1]                                         # a dimension
                log(f"{wdt} 0-d value at {index}", [b.requires_grad, b.is_leaf, b])
            base = torch.tensor([1.0, 2.0], requires_grad=True)
            with torch.no_grad():
                guarded = {"a no_grad view": torch.zeros(3, dtype=dt)[1:]}
            guarded["a split output"] = torch.zeros(4, dtype=dt).split(2)[1]
            with torch.inference_mode():
                guarded["an inference-mode view"] = normal[1:]
            for name, v in guarded.items():
                log.attempt(f"{wdt} copy_ into {name}", lambda v=v, w=w: v.copy_(w))
                log.attempt(f"{wdt} setitem into {name}", lambda v=v, b=base: v.__setitem__(
                    slice(None), b * 2))
                log.attempt(f"{wdt} 0-d setitem into {name}, by fill_",
                            lambda v=v, w=w: v.__setitem__(Ellipsis, w[0]))
                log(f"{wdt} {name} after", [v, v.requires_grad])
    entries = dict(differential(prog).entries)
    assert entries["torch.float32 copy_ into a view"][:3] == [False, True, True]
    assert entries["torch.float64 copy_ into a view: backward"] == ("raises", "NO_GRAD_FN")
    assert entries["torch.float32 copy_ into a no_grad view"] == "ok"
    assert entries["torch.float32 0-d setitem into a no_grad view, by fill_"] == (
        "raises", "NO_GRAD_VIEW_INPLACE")


@pytest.mark.clause("INPLACE-11")
def test_rebinding_in_a_loop_builds_a_chain(differential):
    def prog(torch, log):
        a = f64(torch, [[0.5, 1.0], [1.5, 2.0]], requires_grad=True)
        first = a
        for _ in range(3):
            a = a.tanh() * 2        # new tensors each time, nothing written
        log("first", state(first))
        log("a", [a.is_leaf, a._version])
        a.sum().backward()
        log("first.grad", first.grad)
        b = torch.ones(2)
        keep = b
        b = b + 1
        log("plain rebinding", [keep, keep._version, b])
    differential(prog)


@pytest.mark.clause("INPLACE-12")
def test_long_inplace_chains_match_out_of_place(differential):
    def prog(torch, log):
        x = f64(torch, [[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
        c = f64(torch, [2.0, 3.0])
        y = x * 1
        y.cos_()
        y.mul_(c)
        y.pow_(3)
        y.sub_(x)
        y.abs_()
        y.clamp_(0.0, 5.0)
        y.div_(c)
        log("y", y)
        y.sum().backward()
        log("in-place grad", x.grad)
        x.grad = None
        z = ((((x.cos() * c) ** 3) - x).abs().clamp(0.0, 5.0) / c).sum()
        z.backward()
        log("out-of-place grad", x.grad)
        h = x * 1
        h.tanh_()
        h.mul_(2.0)
        log.attempt("tanh_ then mul_", lambda: h.sum().backward())
    differential(prog)


@pytest.mark.clause("INPLACE-13")
def test_augmented_assignment_on_views_and_with_tensors(differential):
    def prog(torch, log):
        x = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        s = f64(torch, [0.5, 2.0], requires_grad=True)
        y = x * 1
        alias = y
        row = y[1]
        row += s                   # through a view, with a tensor that requires grad
        y *= s                     # broadcasting
        y -= 1
        y /= s
        y **= 2
        log("alias", [alias, alias._version, row._version])
        y.sum().backward()
        log("grads", [x.grad, s.grad])
        t = torch.arange(4)
        t += 1
        t *= 3
        log("int64", [t, t._version])
        log.attempt("leaf -=", lambda: s.__isub__(1.0))
        log.attempt("leaf view *=", lambda: x[0].__imul__(2.0))
    differential(prog)


@pytest.mark.clause("INPLACE-14")
def test_plain_leaves_accept_writes_in_any_mode(differential):
    def prog(torch, log):
        t = torch.arange(6.0).reshape(2, 3)
        t[0, 1:] = torch.tensor([9.0, 8.0])
        t.t().clamp_(0.0, 5.0)
        with torch.no_grad():
            t.sub_(1.0)
        with torch.enable_grad():
            t.neg_()
        log("t", state(t))
        i = torch.zeros(3, dtype=torch.int64)
        i[1] = 4
        i.fill_(2)
        log("int64", state(i))
    differential(prog)


@pytest.mark.clause("INPLACE-15")
def test_former_leaf_written_through_a_view_breaks_old_graph(differential):
    def prog(torch, log):
        x = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        old = (x.exp() * 2).sum()
        x.requires_grad_(False)
        w = f64(torch, [5.0, 6.0], requires_grad=True)
        x[1] = w * 2
        log("state", state(x))
        log.attempt("old graph backward", lambda: old.backward())
        (x * x).sum().backward()
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("INPLACE-15")
def test_former_leaf_hooks_do_not_run_on_its_old_accumulator(differential):
    """The old graph's AccumulateGrad runs the hooks the tensor holds when it runs, and the
    write that gave the leaf a history reset them: a wrong-shaped hook registered before never
    raises HOOK_CHANGED_SIZE there, the backward raises LEAF_MOVED_INTO_GRAPH; a hook
    registered since runs first."""
    def prog(torch, log):
        x = f64(torch, [[1.5], [0.5]], requires_grad=True)
        seen = []

        def wrong_shape(g):
            seen.append(("before", g.tolist()))
            return torch.zeros(3, dtype=torch.float64)
        x.register_hook(wrong_shape)
        old = x.sum()
        log.attempt("backward, the hook of the leaf", lambda: old.backward(retain_graph=True))
        x.requires_grad_(False)
        w = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
        x += w
        log("state", state(x))
        log.attempt("old graph backward", lambda: old.backward(retain_graph=True))
        log("seen", list(seen))
        x.register_hook(lambda g: seen.append(("since", g.tolist())))
        log.attempt("old graph backward, a hook registered since", lambda: old.backward())
        log("seen", list(seen))
        (x * 3).sum().backward()
        log("w.grad", w.grad)
        log("seen", seen)
    differential(prog)


@pytest.mark.clause("INPLACE-9")
def test_setitem_of_a_one_element_value_onto_its_own_memory(differential):
    """torch's setitem views the value without its leading 1s (a 0-d tensor here) and expands
    it with strides 0, and copy_ then refuses it as partly overlapping a one-element target
    over the same memory; a value with the target's own strides, or a copy, is fine."""
    def prog(torch, log):
        t = f64(torch, [[-0.25], [2.0]])
        d = t.data
        log.attempt("d[1:, 0:] = t[1:, 0]", lambda: d.__setitem__(
            (slice(1, None), slice(0, None)), t[1:, 0]))
        log.attempt("d[1:, 0:] = t[1:, 0:]", lambda: d.__setitem__(
            (slice(1, None), slice(0, None)), t[1:, 0:]))
        log.attempt("d[1:, 0:] = t[1:, 0].clone()", lambda: d.__setitem__(
            (slice(1, None), slice(0, None)), t[1:, 0].clone()))
        log.attempt("d[0] = t[1]", lambda: d.__setitem__(0, t[1]))
        log("t", state(t))
    differential(prog)


@pytest.mark.clause("INPLACE-17")
def test_operands_partly_overlapping_the_target_are_refused_when_dense(differential):
    """Dense operands partly overlapping the target raise PARTIAL_OVERLAP before writing
    (every in-place op, setitem, a transpose of the same memory, float32 and float64); the
    same layout, disjoint memory and the leaf checks, which come first, do not."""
    def one(torch, log, dt):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=dt, requires_grad=True)
        y = x * 2
        for fn in ("add_", "sub_", "mul_", "div_", "copy_"):
            log.attempt(f"{fn} shifted", lambda fn=fn: getattr(y[0:3], fn)(y[1:4]))
        log.attempt("setitem shifted", lambda: y.__setitem__(slice(1, 4), y[0:3]))
        log("y unchanged", state(y))
        log.attempt("same layout", lambda: y[1:3].mul_(y[1:3]))
        log.attempt("disjoint halves", lambda: y[0:2].add_(y[2:4]))
        log("y", state(y))
        m = (torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dt) * 1).requires_grad_()
        log.attempt("leaf first", lambda: m.t().add_(m))
        n = m * 1
        log.attempt("transpose", lambda: n.t().add_(n))
        log.attempt("rows", lambda: n[0].add_(n[1]))
        n.sum().backward()
        log("m.grad", m.grad)

    def prog(torch, log):
        for dt in (torch.float32, torch.float64):
            one(torch, log, dt)
    differential(prog)


@pytest.mark.clause("INPLACE-18")
def test_writes_to_a_tensor_whose_elements_share_memory_are_refused(differential):
    """An expanded dim (size > 1, stride 0) refuses every in-place op but fill_ and zero_, and
    every setitem that writes such a dim, a number too, before writing (float32 and float64,
    0-d and 1-row bases, non-leaf and plain tensors); a row of it is written as any view, the
    leaf check comes first, and a refused write leaves the graph as it was."""
    def one(torch, log, dt):
        x = torch.tensor([[1.0, 2.0, 3.0]], dtype=dt, requires_grad=True)
        y = x * 2
        e = y.expand(2, 3)
        for fn, args in (("add_", (1.0,)), ("sub_", (torch.ones(2, 3, dtype=dt),)),
                         ("mul_", (2.0,)), ("div_", (2.0,)), ("exp_", ()), ("neg_", ()),
                         ("copy_", (torch.ones(2, 3, dtype=dt),))):
            log.attempt(f"{fn} expanded", lambda fn=fn, args=args: getattr(e, fn)(*args))
        log.attempt("setitem column", lambda: e.__setitem__((slice(None), 1), 5.0))
        log.attempt("fill_ of a tensor", lambda: e.fill_(torch.tensor(5.0, dtype=dt)))
        log.attempt("setitem all", lambda: e.__setitem__(Ellipsis, torch.ones(2, 3, dtype=dt)))
        log("y unchanged", state(y))
        log.attempt("setitem row", lambda: e.__setitem__(0, torch.ones(3, dtype=dt)))
        log.attempt("fill_", lambda: e.fill_(0.5))
        log("y", state(y))
        log.attempt("leaf first", lambda: x.expand(2, 3).mul_(2.0))
        p = torch.tensor(0.5, dtype=dt).expand(3)
        log.attempt("0-d base", lambda: p.add_(1.0))
        log.attempt("0-d base zero_", lambda: p.zero_())
        log("p", p)
        empty = torch.tensor([[]], dtype=dt).expand(2, 0)
        log.attempt("empty", lambda: empty.mul_(2.0))
        log("empty version", empty._version)
        # a pass through the fill_'s CopySlices is left open (torch raises): one without it
        z = x * 3
        log.attempt("z expanded", lambda: z.expand(2, 3).mul_(2.0))
        z.sum().backward()
        log("x.grad", x.grad)

    def prog(torch, log):
        for dt in (torch.float32, torch.float64):
            one(torch, log, dt)
    differential(prog)


@pytest.mark.clause("INPLACE-1", "INPLACE-10")
def test_fill_takes_a_0_d_value_only_after_the_leaf_check(differential):
    """fill_ with a tensor value of one dimension or more is refused (torch's own check, no
    spec kind), after the refusal of a leaf that requires grad (LEAF_INPLACE first)."""
    def prog(torch, log):
        for dt in (torch.float32, torch.float64):
            for shape in ((1,), (3,), (1, 1)):
                value = torch.ones(shape, dtype=dt)
                log.attempt(f"{dt} {shape} plain", lambda v=value, dt=dt: torch.zeros(
                    3, dtype=dt).fill_(v))
                leaf = torch.zeros(3, dtype=dt, requires_grad=True)
                log.attempt(f"{dt} {shape} leaf", lambda v=value, t=leaf: t.fill_(v))
            log.attempt(f"{dt} 0-d", lambda dt=dt: torch.zeros(3, dtype=dt).fill_(
                torch.tensor(2.0, dtype=dt)))
    entries = dict(differential(prog).entries)
    assert entries["torch.float32 (3,) leaf"] == ("raises", "LEAF_INPLACE")
    assert entries["torch.float32 0-d"] == "ok"


@pytest.mark.clause("INPLACE-10")
@pytest.mark.clause("UNSPEC-18")
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_fills_exception_leaves_an_integral_tensor_requiring_grad(differential, dtype):
    """A 0-d value that requires grad, filled or set into a part of an integer or bool tensor,
    makes it require grad; its flags, values and its views' grad_fn are specified (what is
    computed with it is not, UNSPEC-18). `__setitem__` itself returns None."""
    def prog(torch, log):
        for how in ("fill_", "part", "element", "whole"):
            w = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
            x = torch.tensor([[1, 0, 3], [4, 5, 0]]).to(getattr(torch, dtype))
            v, flat = x[0], x.view(6)
            if how == "fill_":
                log("fill_", x.fill_(w * 1).tolist())
            else:
                key = {"part": slice(0, 1), "element": (0, 1), "whole": ...}[how]
                log("__setitem__", x.__setitem__(key, w * 1))
            log(how, (x.requires_grad, x.is_leaf, x.grad_fn and x.grad_fn.name(),
                      x._version, x.tolist()))
            log(how + " views", [(t.requires_grad, t.grad_fn and t.grad_fn.name())
                                 for t in (v, flat)])
    differential(prog)
