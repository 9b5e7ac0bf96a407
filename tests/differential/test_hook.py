"""Differential tests for HOOK-1 .. HOOK-16 (spec/hook.md): tensor hooks, post-accumulate-grad
hooks, node hooks on `grad_fn`, and the order in which hooks on different tensors fire.

Hooks log what they see into the test log, so a divergence in arguments, call count or order
shows up as a differing log entry; torch's log is the expected one.
"""
import pytest


@pytest.mark.clause("HOOK-1")
def test_hooks_on_leaf_and_nonleaf_get_gradient_of_own_shape(differential):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
        col = torch.tensor([[1.0], [-2.0]], dtype=torch.float64, requires_grad=True)
        y = x * col                          # broadcasts to (2, 3)
        x.register_hook(lambda g: log("x hook", g))
        col.register_hook(lambda g: log("col hook", g))
        h = y.register_hook(lambda g: log("y hook", g))
        (y.sigmoid() * 4).sum().backward()
        log("handle has remove", callable(h.remove))
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-2")
def test_three_hooks_chain_in_registration_order_on_a_leaf(differential):
    def prog(torch, log):
        w = torch.tensor([1.0, -2.0], requires_grad=True)
        w.register_hook(lambda g: log("h1 saw", g) or g * 2)
        w.register_hook(lambda g: log("h2 saw", g))                # passes g on unchanged
        w.register_hook(lambda g: log("h3 saw", g) or g - 1)
        (w * w).sum().backward()
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("HOOK-3")
def test_observing_hooks_do_not_change_grads(differential):
    def prog(torch, log):
        x = torch.tensor([0.5, 1.5, -2.0], dtype=torch.float64, requires_grad=True)
        y = x.exp()
        z = y.log()
        for name, t in (("x", x), ("y", y), ("z", z)):
            t.register_hook(lambda g, name=name: log(name + " hook", g))
        (z * z).sum().backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-4")
def test_replacement_flows_to_inputs_and_leaf_grad(differential):
    def prog(torch, log):
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0], requires_grad=True)
        y = a * b
        y.register_hook(lambda g: torch.zeros_like(g) + torch.tensor([1.0, -1.0]))
        b.register_hook(lambda g: g * 100)          # replacement on a leaf
        (y * y).sum().backward()
        log("a.grad", a.grad)
        log("b.grad", b.grad)
    differential(prog)


@pytest.mark.clause("HOOK-5")
def test_broadcastable_replacement_is_still_rejected(differential):
    def prog(torch, log):
        x = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: torch.ones(1, 3, dtype=torch.float64))   # would broadcast
        log.attempt("backward with broadcastable replacement", lambda: y.sum().backward())
        log("x.grad", x.grad)
        w = torch.ones(3, requires_grad=True)
        w.register_hook(lambda g: torch.ones(4))                           # on a leaf
        log.attempt("leaf replacement of wrong size", lambda: (w * 3).sum().backward())
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("HOOK-6")
def test_remove_one_hook_of_several_on_a_leaf(differential):
    def prog(torch, log):
        w = torch.tensor([2.0, 3.0], requires_grad=True)
        h1 = w.register_hook(lambda g: log("h1", g) or g * 10)
        w.register_hook(lambda g: log("h2", g))
        (w * w).sum().backward()
        log("w.grad after pass 1", w.grad)
        h1.remove()
        h1.remove()                                   # removing twice is harmless
        (w * w).sum().backward()                      # a fresh graph
        log("w.grad after pass 2", w.grad)
    differential(prog)


@pytest.mark.clause("HOOK-7")
def test_hook_registration_rejected_without_requires_grad(differential):
    def prog(torch, log):
        w = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            nog = w * 2
        log.attempt("hook on no_grad result", lambda: nog.register_hook(lambda g: g))
        log.attempt("hook on float64 constant",
                    lambda: torch.zeros(3, dtype=torch.float64).register_hook(lambda g: g))
        log.attempt("post hook on constant",
                    lambda: torch.zeros(3).register_post_accumulate_grad_hook(lambda t: None))
        log.attempt("hook on tensor that requires grad", lambda: w.register_hook(lambda g: g))
    differential(prog)


@pytest.mark.clause("HOOK-8")
def test_leaf_hook_sees_only_this_pass(differential):
    def prog(torch, log):
        w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        w.register_hook(lambda g: log("hook got", g) or log("grad at hook", w.grad) or -g)
        for _ in range(3):
            (w * w).sum().backward()
            log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("HOOK-9")
def test_hooks_off_path_and_on_unused_leaf_stay_silent(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        unused = torch.tensor([5.0], requires_grad=True)
        calls = []
        unused.register_hook(lambda g: calls.append("unused"))
        a = x * 2
        side = a * 3                     # depends on a, but the loss does not use it
        side.register_hook(lambda g: calls.append("side"))
        a.register_hook(lambda g: calls.append("a"))
        x.register_hook(lambda g: calls.append("x"))
        a.sum().backward()
        log("calls", calls)
        log("unused.grad", unused.grad)
    differential(prog)


@pytest.mark.clause("HOOK-10")
def test_leaf_used_three_times_hook_called_once_per_pass(differential):
    def prog(torch, log):
        w = torch.tensor([[1.0, 2.0]], dtype=torch.float64, requires_grad=True)
        seen = []
        w.register_hook(lambda g: seen.append(g.tolist()))
        m = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64)
        ((w * m).sum() + (w * w).sum() + w.sin().sum()).backward()   # broadcast use too
        log("calls after pass 1", seen)
        (w * 2).sum().backward()
        log("calls after pass 2", seen)
    differential(prog)


@pytest.mark.clause("HOOK-11")
def test_hooks_around_two_inplace_ops(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        y = x * 1
        y.register_hook(lambda g: log("v0 hook", g) or g * 2)
        y.add_(1)
        y.register_hook(lambda g: log("v1 hook", g))
        y.mul_(y.detach() * 0 + 3)
        y.register_hook(lambda g: log("v2 hook", g))
        (y * y).sum().backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-12")
def test_post_accumulate_hook_registration_rules(differential):
    def prog(torch, log):
        w = torch.zeros(2, 2, dtype=torch.float64, requires_grad=True)
        v = w.reshape(4)                     # a view: not a leaf
        log.attempt("on a view of a leaf", lambda: v.register_post_accumulate_grad_hook(print))
        log.attempt("on a sum", lambda: w.sum().register_post_accumulate_grad_hook(print))
        with torch.no_grad():
            c = w * 2
        log.attempt("on a no_grad result", lambda: c.register_post_accumulate_grad_hook(print))
        h = log.attempt("on the leaf", lambda: w.register_post_accumulate_grad_hook(print))
        log("handle has remove", callable(h.remove))
        h.remove()
        (w * 1).sum().backward()             # the removed hook (print) must not run
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("HOOK-13")
def test_post_accumulate_hooks_order_and_autograd_grad(differential):
    def prog(torch, log):
        w = torch.tensor([1.0, 2.0], requires_grad=True)

        def halve(t):                        # a post hook may update .grad in place
            t.grad.mul_(0.5)

        w.register_post_accumulate_grad_hook(lambda t: log("post1 sees", t.grad))
        w.register_post_accumulate_grad_hook(halve)
        w.register_post_accumulate_grad_hook(lambda t: log("post3 sees", t.grad))
        w.register_hook(lambda g: log("tensor hook", g))
        for _ in range(2):
            (w * 4).sum().backward()
            log("w.grad", w.grad)
        log("autograd.grad", torch.autograd.grad((w * w).sum(), w))
        log("w.grad after autograd.grad", w.grad)
    differential(prog)


@pytest.mark.clause("HOOK-14")
def test_seed_graph_hook_order(differential):
    def prog(torch, log):
        order = []
        w1, w2, w3 = [torch.tensor(v, requires_grad=True) for v in (2.0, 3.0, 4.0)]
        l1 = torch.ones(2, 2) * w1
        l2 = l1 + w2
        l3 = l1 * w3
        l4 = l2 * l3
        loss = l4.mean()
        named = (("w1", w1), ("w2", w2), ("w3", w3), ("l1", l1), ("l2", l2), ("l3", l3),
                 ("l4", l4), ("loss", loss))
        for name, t in named:
            t.register_hook(lambda g, name=name: order.append(name))
        loss.backward()
        log("order", order)
    differential(prog)


@pytest.mark.clause("HOOK-14")
def test_diamond_and_chain_hook_order(differential):
    def prog(torch, log):
        order = []
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        p = x.exp()           # recorded first
        q = x * 3
        r = q.tanh()          # recorded last: its branch runs first
        s = p * 2
        t = s + r
        for name, v in (("x", x), ("p", p), ("q", q), ("r", r), ("s", s), ("t", t)):
            v.register_hook(lambda g, name=name: order.append(name))
        t.sum().backward()
        log("order", order)
    differential(prog)


@pytest.mark.clause("HOOK-14")
@pytest.mark.parametrize("form", ["forward(ctx, ...)", "setup_context"])
def test_a_custom_functions_node_is_made_before_its_forward_runs(differential, form):
    """A custom Function's node is created as apply begins, before forward: what forward
    records under enable_grad is created after it, so among the nodes ready together its
    branch runs first."""
    def prog(torch, log):
        stash, order = [], []

        class F(torch.autograd.Function):
            @staticmethod
            def backward(ctx, g):
                order.append("F backward")
                return g * 2

        def forward(*args):
            a = args[-1]
            with torch.enable_grad():
                stash.append(a.exp())
            return a * 2

        if form == "setup_context":
            F.forward = staticmethod(lambda a: forward(a))
            F.setup_context = staticmethod(lambda ctx, inputs, output: None)
        else:
            F.forward = staticmethod(lambda ctx, a: forward(ctx, a))
        for dt in (torch.float32, torch.float64):
            order.clear()
            x = torch.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
            y = F.apply(x)
            e = stash.pop()
            e.register_hook(lambda g: order.append("e hook"))
            y.register_hook(lambda g: order.append("y hook"))
            (y.sum() + e.sum()).backward()
            log(f"{dt} order", list(order))
            log(f"{dt} x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-15")
def test_node_hooks_two_input_node_and_removal(differential):
    def prog(torch, log):
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0], requires_grad=True)
        y = a * b
        y.grad_fn.register_prehook(lambda go: log("pre grad_outputs", go))
        y.grad_fn.register_hook(lambda gi, go: log("post grad_inputs", gi))
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0, gi[1]))      # zero a's gradient
        h = y.grad_fn.register_prehook(lambda go: (go[0] * 100,))
        h.remove()
        y.register_hook(lambda g: g * 2)
        z = (y * y).sum()
        z.backward()
        log("a.grad", a.grad)
        log("b.grad", b.grad)
    differential(prog)


@pytest.mark.clause("HOOK-16")
def test_autograd_grad_runs_leaf_and_nonleaf_hooks(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, -1.0], dtype=torch.float64, requires_grad=True)
        x.register_hook(lambda g: log("x hook", g) or g + 1)
        h = x.sin()
        h.register_hook(lambda g: log("h hook", g) or g * 3)
        out = (h * h).sum()
        log("grad wrt x", torch.autograd.grad(out, x, retain_graph=True))
        log("grad wrt h", torch.autograd.grad(out, h, retain_graph=True))
        log("grad wrt h and x", torch.autograd.grad(out, [h, x]))
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("HOOK-2", "HOOK-15", "HOOK-17", "RETAIN-5", "VIEW-6")
@pytest.mark.parametrize("op", ("split", "chunk", "unbind", "split sizes"))
def test_hooks_and_retain_grad_on_the_outputs_of_one_multi_output_view_node(differential, op):
    """The outputs of one split, chunk or unbind share a node: each output's tensor hooks run on
    its own gradient, in the order the tensors first got a hook across outputs, an output that
    got no gradient passes None, retain_grad keeps what the hooks made, and the node's pre- and
    post-hooks see one gradient per output."""
    def pieces(torch, y):
        return {"split": lambda: y.split(2), "chunk": lambda: y.chunk(2),
                "unbind": lambda: y.view(2, 2).unbind(),
                "split sizes": lambda: y.split([1, 3])}[op]()

    def prog(torch, log):
        x = torch.tensor([1.0, -2.0, 3.0, 0.5], dtype=torch.float64, requires_grad=True)
        a, b = pieces(torch, x * 2)
        b.register_hook(lambda g: log("b saw", g) or (None if g is None else g * 10))
        a.register_hook(lambda g: log("a saw", g))
        a.retain_grad()
        b.retain_grad()
        a.grad_fn.register_prehook(lambda go: log("pre saw", list(go)))
        a.grad_fn.register_hook(lambda gi, go: log("post saw", [list(gi), list(go)]))
        (a.sum() * 3 + b.sum()).backward(retain_graph=True)
        log("a.grad, b.grad, x.grad", [a.grad, b.grad, x.grad])
        a.sum().backward()              # b gets no gradient: its hook sees None
        log("again", [a.grad, b.grad, x.grad])
    differential(prog)


@pytest.mark.clause("HOOK-15", "HOOK-17", "FUNC-9")
def test_hooks_and_retain_grad_on_the_outputs_of_a_custom_function(differential):
    """A custom Function with two outputs: per-output tensor hooks (one replacing its
    gradient), retain_grad of both, and node hooks that see both gradients and replace one."""
    def prog(torch, log):
        class Two(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2, x * x

            @staticmethod
            def backward(ctx, ga, gb):
                x, = ctx.saved_tensors
                return ga * 2 + gb * 2 * x

        x = torch.tensor([1.0, -0.5], dtype=torch.float64, requires_grad=True)
        a, b = Two.apply(x)
        b.register_hook(lambda g: log("b saw", g) or g * 10)
        a.register_hook(lambda g: log("a saw", g))
        a.retain_grad()
        b.retain_grad()
        a.grad_fn.register_prehook(lambda go: log("pre saw", list(go)) or (go[0] * 3, go[1]))
        a.grad_fn.register_hook(lambda gi, go: log("post saw", [list(gi), list(go)]))
        (a.sum() + b.sum()).backward()
        log("a.grad, b.grad, x.grad", [a.grad, b.grad, x.grad])
    differential(prog)


@pytest.mark.clause("HOOK-15", "FUNC-5")
@pytest.mark.parametrize("node", ["built-in mul", "custom Function", "custom Function, "
                                  "setup_context"])
@pytest.mark.parametrize("pass_", ["backward(inputs=)", "autograd.grad"])
def test_a_post_hook_sees_what_the_node_computed_for_an_input_the_pass_prunes(
        differential, node, pass_):
    """A built-in node computes nothing for an input on no path to what the pass wants, so its
    post hook sees None there; a custom Function's backward still returns a gradient for it
    (needs_input_grad ignores the pruning), which the post hook sees and the pass drops."""
    def prog(torch, log):
        class Mul(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * a

        class MulCtx(torch.autograd.Function):
            @staticmethod
            def forward(a, b):
                return a * b

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(*inputs)

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * a

        for dname, dt in (("float32", torch.float32), ("float64", torch.float64)):
            for shape in ([0.5, 1.0], [[0.5], [-1.5]]):
                a = torch.tensor(shape, dtype=dt, requires_grad=True)
                b = torch.tensor(shape, dtype=dt, requires_grad=True) * -0.75
                fn = {"built-in mul": lambda x, y: x * y, "custom Function": Mul.apply,
                      "custom Function, setup_context": MulCtx.apply}[node]
                y = fn(a * 2, b)
                seen = []
                y.grad_fn.register_hook(lambda gi, go, seen=seen: seen.append(list(gi)))
                if pass_ == "autograd.grad":
                    got = torch.autograd.grad(y.sum(), [b])
                else:
                    y.sum().backward(inputs=[b])
                    got = [b.grad]
                log(f"{dname} {len(shape)}-d", [seen, got, a.grad])
    differential(prog)


@pytest.mark.clause("HOOK-15")
@pytest.mark.parametrize("plain", [0, 1], ids=["first argument", "second argument"])
def test_a_functions_post_hook_sees_what_backward_returned_for_an_argument_without_grad(
        differential, plain):
    """A custom Function's node passes its post hooks what its backward returned for every
    argument, one that requires no grad (no next function) included; a built-in op's node
    computes none for it."""
    def prog(torch, log):
        class Both(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g * 2, g * 3

        for dt in (torch.float32, torch.float64):
            seen = []
            args = [torch.tensor([1.0, -2.0], dtype=dt, requires_grad=i != plain)
                    for i in range(2)]
            y = Both.apply(*args)
            y.grad_fn.register_hook(lambda gi, go, seen=seen: seen.append(
                ("Both", [None if g is None else g.tolist() for g in gi])))
            z = args[0] * args[1]
            z.grad_fn.register_hook(lambda gi, go, seen=seen: seen.append(
                ("mul", [None if g is None else g.tolist() for g in gi])))
            (y.sum() + z.sum()).backward()
            log(f"{dt}", [seen, [a.grad for a in args]])
    differential(prog)
