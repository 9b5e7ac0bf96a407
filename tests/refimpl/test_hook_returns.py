"""torch against refimpl where the spec's 1.1.0 revisions made refimpl follow torch: what node
hooks return and undefined gradients (HOOK-17, LEAF-10), the order node hooks run in
(HOOK-15, RETAIN-5), hook removal during a pass (HOOK-6), views taken under no_grad (MODE-9,
MODE-10, LEAF-11), the requires_grad setter (LEAF-11, LEAF-15), dict inputs (API-13), the order
of the argument checks (API-4, API-8), the dtype of `gradient` (API-3), zero-element outputs
(API-1), the CopySlices name (INPLACE-16) and the thread-local grad mode."""
import threading

import pytest

from ._twin import same


def _node_hook_program(kind, make):
    """A backward through `x * 2` whose node has one pre- or post-hook returning make(grads)."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        if kind == "pre":
            y.grad_fn.register_prehook(lambda go: make(torch, go))
        else:
            y.grad_fn.register_hook(lambda gi, go: make(torch, gi))
        y.sum().backward()
        return x.grad
    return prog


RETURNS = {  # HOOK-17: name -> (hook kind, what it returns from the gradients it was given)
    "list": ("post", lambda torch, g: list(g)),
    "tensor": ("pre", lambda torch, g: g[0] * 10),
    "short": ("post", lambda torch, g: (g[0],)),
    "long": ("pre", lambda torch, g: (g[0], g[0])),
    "empty": ("pre", lambda torch, g: ()),
    "replace none": ("post", lambda torch, g: (g[0], torch.ones(()))),
    "number": ("pre", lambda torch, g: (1.0,)),
    "dtype": ("post", lambda torch, g: (torch.ones(2, dtype=torch.float64), None)),
    "dtype before shape": ("pre", lambda torch, g: (torch.ones(3, dtype=torch.float64),)),
    "shape": ("pre", lambda torch, g: (torch.ones(3),)),
    "post shape": ("post", lambda torch, g: (torch.ones(3), None)),
    "none entry": ("pre", lambda torch, g: (None,)),
    "scaled": ("pre", lambda torch, g: (g[0] * 10,)),
    "same tuple": ("post", lambda torch, g: tuple(g)),
}


@pytest.mark.parametrize("name", sorted(RETURNS))
def test_node_hook_returns(name):
    kind, make = RETURNS[name]
    same(_node_hook_program(kind, make))


def test_node_hook_returns_raise_the_spec_kinds():
    """The kinds HOOK-17 names, so that a change of torch's wording shows here first."""
    want = {"list": "HOOK_RETURNED_NON_TUPLE", "short": "HOOK_WRONG_COUNT",
            "replace none": "HOOK_REPLACED_NONE", "number": "HOOK_RETURNED_NON_TENSOR",
            "dtype before shape": "HOOK_CHANGED_TYPE", "shape": "HOOK_CHANGED_SIZE"}
    got = {name: same(_node_hook_program(*RETURNS[name])) for name in want}
    assert got == {name: ("raises", kind) for name, kind in want.items()}


def test_undefined_gradient_reaches_hooks_as_none():
    """LEAF-10, HOOK-17: tensor and post-accumulate hooks see None, .grad stays."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.grad = torch.tensor([5.0, 5.0])
        w = torch.tensor(3.0, requires_grad=True)
        h = x.exp()
        y = h * w
        log = []
        h.register_hook(lambda g: log.append(("h", g)))
        x.register_hook(lambda g: log.append(("x", g)))
        x.register_post_accumulate_grad_hook(lambda t: log.append(("x post", t.grad)))
        acc = h.grad_fn.next_functions[0][0]
        acc.register_hook(lambda gi, go: log.append(("acc post", gi, go)))
        y.grad_fn.register_hook(lambda gi, go: (None, gi[1]))
        y.sum().backward()
        return log, x.grad, w.grad
    log, x_grad, w_grad = same(prog)
    assert x_grad == [5.0, 5.0] and [entry[0] for entry in log] == ["h", "x", "x post", "acc post"]


def test_undefined_gradient_cannot_be_replaced_by_a_tensor_hook():
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.grad_fn.register_prehook(lambda go: (None,))
        x.register_hook(lambda g: torch.ones(2))
        y.sum().backward()
    assert same(prog) == ("raises", "HOOK_REPLACED_NONE")


def test_undefined_gradient_of_a_moved_leaf_still_raises():
    """The leaf check comes before the undefined gradient is dropped (INPLACE-15)."""
    def prog(torch):
        a = torch.ones(2, requires_grad=True)
        b = a.exp()
        a.requires_grad_(False)
        a.mul_(torch.tensor(3.0, requires_grad=True))
        b.grad_fn.register_prehook(lambda go: (None,))
        b.sum().backward()
    assert same(prog) == ("raises", "LEAF_MOVED_INTO_GRAPH")


def test_node_hooks_order_and_which_nodes_run():
    """HOOK-15 and RETAIN-5: the retained grad is stored before the pre-hooks; an input's
    node runs in backward(inputs=) but not in autograd.grad; AccumulateGrad's hooks."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        y = (h * h).sum()
        log = []
        h.retain_grad()
        h.register_hook(lambda g: g + 1)
        h.grad_fn.register_prehook(lambda go: log.append(("pre", h.grad)) or (go[0] * 10,))
        h.grad_fn.register_hook(lambda gi, go: log.append(("post", [g is None for g in gi])))
        acc = h.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log.append(("acc pre", go)))
        acc.register_hook(lambda gi, go: log.append(("acc post", gi, x.grad)))
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post acc", t.grad)))
        out = [torch.autograd.grad(y, h, retain_graph=True),
               torch.autograd.grad(y, x, retain_graph=True)]
        y.backward(inputs=[h], retain_graph=True)
        y.backward()
        return out, log, h.grad, x.grad
    same(prog)


def test_hook_removed_during_a_pass():
    """HOOK-6: removal by an earlier node's hook takes effect, by one of the same set not."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        z = y * 3
        log, handles = [], {}
        handles["y"] = y.register_hook(lambda g: log.append("y"))
        handles["pre"] = y.grad_fn.register_prehook(lambda go: log.append("y pre"))
        handles["post"] = y.grad_fn.register_hook(lambda gi, go: log.append("y post"))
        y.register_hook(lambda g: log.append("y2") or handles["pre"].remove())
        z.register_hook(lambda g: log.append("z1") or handles["z2"].remove())
        handles["z2"] = z.register_hook(lambda g: log.append("z2") or g * 10)
        z.grad_fn.register_prehook(lambda go: handles["y"].remove())
        handles["x post"] = x.register_post_accumulate_grad_hook(lambda t: log.append("x post"))
        x.register_hook(lambda g: handles["x post"].remove())
        s = z.sum()
        s.backward(retain_graph=True)
        s.backward()
        return log, x.grad
    log, _ = same(prog)
    assert log[:4] == ["z1", "z2", "y2", "y post"]


def test_no_grad_view_flags_and_hooks():
    """MODE-9, MODE-10, LEAF-11."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with torch.no_grad():
            v = x[1:]
        log = []
        v.register_hook(lambda g: log.append("tensor"))
        v.register_post_accumulate_grad_hook(lambda t: log.append("post"))
        v.retain_grad()
        v.requires_grad_(False)
        v.requires_grad = False
        flags = [v.requires_grad, v.is_leaf, v.retains_grad]
        (v * 2).sum().backward()
        before = (list(log), v.grad)
        v.requires_grad_()
        (v * 2).sum().backward()
        x.requires_grad_(False)
        return flags, before, log, v.grad, x.grad, v.requires_grad
    same(prog)


@pytest.mark.parametrize("flag", [True, False])
def test_requires_grad_setter(flag):
    """LEAF-11: the setter refuses a non-leaf whatever the flag; LEAF-15 on an integer."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.requires_grad = flag
    def integer(torch):
        i = torch.tensor([1, 2])
        i.requires_grad = flag
        return i.requires_grad
    assert same(prog) == ("raises", "REQUIRES_GRAD_NONLEAF")
    want = ("raises", "REQUIRES_GRAD_DTYPE_FLAG") if flag else False
    assert same(integer) == want


def test_requires_grad_setter_messages_follow_torch():
    import torch

    import refimpl

    def messages(lib):
        out = []
        for fn in (lambda: setattr(lib.tensor([1.0], requires_grad=True) * 2, "requires_grad",
                                   True),
                   lambda: setattr(lib.tensor([1, 2]), "requires_grad", True)):
            try:
                fn()
            except RuntimeError as exc:
                out.append(str(exc))
        return out
    assert messages(refimpl) == messages(torch)


def test_dict_inputs():
    """API-13."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = torch.tensor(3.0, requires_grad=True)
        g = torch.autograd.grad((x * w).sum(), {"w": w, "x": x, "again": x})
        unused = torch.autograd.grad((x * 2).sum(), {"w": w, "x": x}, allow_unused=True)
        (x * w).sum().backward(inputs={"x": x})
        return list(g.items()), list(unused.items()), x.grad, w.grad
    same(prog)


@pytest.mark.parametrize("case", ["grad empty dict", "grad empty list", "backward empty dict",
                                  "unused", "no grad"])
def test_dict_input_errors(case):
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = torch.tensor(3.0, requires_grad=True)
        c = torch.tensor(1.0)
        y = (x * 2).sum()
        if case == "grad empty dict":
            torch.autograd.grad(y, {})
        elif case == "grad empty list":
            torch.autograd.grad(y, [])
        elif case == "backward empty dict":
            y.backward(inputs={})
        elif case == "unused":
            torch.autograd.grad(y, {"w": w, "x": x})
        else:
            torch.autograd.grad(y, {"x": x, "c": c})
    result = same(prog)
    assert result[0] == "raises"


def test_other_mappings_are_refused_as_torch_refuses_them():
    import collections

    import torch

    import refimpl

    def error(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(TypeError) as info:
            lib.autograd.grad((x * 2).sum(), collections.OrderedDict(x=x))
        return str(info.value)
    assert error(refimpl) == error(torch)


CHECK_ORDER = {  # API-4, API-8: which check fails first
    "shape before no grad_fn": lambda t, x, w, c: t.autograd.grad(c * 2, w, t.ones(3)),
    "no grad_fn, nonscalar": lambda t, x, w, c: t.autograd.grad(c * 2, w),
    "implicit before no grad_fn": lambda t, x, w, c: t.autograd.grad([c.sum(), w * 2], w),
    "no grad_fn before input": lambda t, x, w, c: t.autograd.grad([(w * 2).sum(), c.sum()], [c]),
    "backward shape before no grad_fn": lambda t, x, w, c: t.autograd.backward([c], [t.ones(3)]),
    "backward no grad_fn before inputs": lambda t, x, w, c: c.sum().backward(inputs=[c]),
    "input": lambda t, x, w, c: t.autograd.grad((w * 2).sum(), [w, c], allow_unused=True),
}


@pytest.mark.parametrize("case", sorted(CHECK_ORDER))
def test_argument_check_order(case):
    def prog(torch):
        x = torch.tensor([1.0, 2.0])
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        c = torch.tensor([1.0, 2.0])
        return CHECK_ORDER[case](torch, x, w, c)
    assert same(prog)[0] == "raises"


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
def test_gradient_dtype_is_cast(dtype):
    """API-3."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        seen = []
        y.register_hook(lambda g: seen.append(str(g.dtype)))
        gradient = torch.tensor([1, 0], dtype=getattr(torch, dtype))
        y.backward(gradient)
        return seen, x.grad, str(x.grad.dtype)
    same(prog)


def test_zero_element_outputs():
    """API-1."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        e = x[2:] * 2
        out = []
        for fn in (lambda: e.backward(), lambda: torch.autograd.grad(e, x)):
            try:
                fn()
            except RuntimeError as exc:
                out.append(str(exc))
        e.backward(torch.ones(0))
        return out, x.grad
    same(prog)


def test_copy_slices_name():
    """INPLACE-16."""
    def prog(torch):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        y[1:3].mul_(10.0)
        first = (y.grad_fn.name(), y._version)
        y[0] = 5.0
        return first, y.grad_fn.name(), y._version
    same(prog)


def test_grad_mode_is_thread_local():
    """MODE area: a thread starts with grad mode on and its changes stay its own."""
    def prog(torch):
        seen = {}

        def worker():
            seen["start"] = torch.is_grad_enabled()
            torch.set_grad_enabled(False)
            seen["set"] = torch.is_grad_enabled()
        with torch.no_grad():
            t = threading.Thread(target=worker)
            t.start()
            t.join()
            seen["main"] = torch.is_grad_enabled()
        seen["after"] = torch.is_grad_enabled()
        return [seen["start"], seen["set"], seen["main"], seen["after"]]
    assert same(prog) == [True, False, False, True]
