"""The backward engine against torch from angles the spec examples do not take: execution order
and ties (HOOK-14), hook kinds on one node (HOOK-2, HOOK-8, HOOK-13, HOOK-15, RETAIN-5), what hooks
may return (HOOK-5, HOOK-13), captures in autograd.grad (API-6, API-10, HOOK-16),
backward(inputs=) (API-11), several roots (API-12), an expanded .grad (LEAF-12) and the freeing of
a shared subgraph (FREE-5)."""
from ._twin import same


def test_order_of_tensor_hooks_across_a_diamond():
    def prog(torch):
        seen = []
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0], requires_grad=True)
        for name, t in (("a", a), ("b", b)):
            t.register_hook(lambda g, n=name: seen.append(n))
        c = a * b
        d = c.exp()
        e = c.sin()
        f = a + b
        for name, t in (("c", c), ("d", d), ("e", e), ("f", f)):
            t.register_hook(lambda g, n=name: seen.append(n))
        (d.sum() + e.sum() * f.sum()).backward()
        return [seen, a.grad, b.grad]
    same(prog)


def test_all_hook_kinds_on_one_node_in_order():
    def prog(torch):
        seen = []
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.register_hook(lambda g: seen.append(("tensor", g.tolist())) or g * 2)
        y.retain_grad()
        y.grad_fn.register_prehook(lambda go: seen.append(("pre", go[0].tolist())))
        y.grad_fn.register_hook(lambda gi, go: seen.append(("post", gi[0].tolist(),
                                                             go[0].tolist())))
        x.register_hook(lambda g: seen.append(("leaf", g.tolist())))
        x.register_post_accumulate_grad_hook(lambda t: seen.append(("acc", t.grad.tolist())))
        y.sum().backward()
        return [seen, y.grad, x.grad]
    same(prog)


def test_node_hooks_may_replace_gradients():
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
        y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, gi[1]))
        y.sum().backward()
        out = [x.grad]
        z = x * 2
        z.grad_fn.register_hook(lambda gi, go: (gi[0],))  # one value for two inputs
        try:
            z.sum().backward()
        except RuntimeError as e:
            out.append(str(e))
        return out
    same(prog)


def test_autograd_grad_captures_and_hooks():
    def prog(torch):
        seen = []
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        h = x.sin()
        h.register_hook(lambda g: seen.append(("h", g.tolist())) or g * 2)
        m = h * h
        m.register_hook(lambda g: seen.append(("m", g.tolist())))
        out = (m * 3).sum()
        r1 = torch.autograd.grad(out, [h, x], retain_graph=True)
        r2 = torch.autograd.grad(out, [m, h], retain_graph=True)
        r3 = torch.autograd.grad(out, h)
        return [seen, r1, r2, r3, x.grad]
    same(prog)


def test_backward_inputs_selects_accumulation():
    def prog(torch):
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0], requires_grad=True)
        h = a * b
        out = (h * h).sum()
        out.backward(inputs=[b], retain_graph=True)
        r = [a.grad, b.grad]
        out.backward(inputs=[h, a])
        return r + [a.grad, b.grad, h.grad, h.retains_grad]
    same(prog)


def test_several_roots_and_grad_tensors():
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        z = y.exp()
        seen = []
        y.register_hook(lambda g: seen.append(g.tolist()))
        torch.autograd.backward([z, y], [torch.tensor([1.0, 0.5]), torch.tensor([2.0, 2.0])])
        return [seen, x.grad]
    same(prog)


def test_shared_subgraph_is_freed_once_run():
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        h = x.exp()
        a = (h * 2).sum()
        b = (h + 1).sum()
        a.backward()
        out = [x.grad]
        try:
            b.backward()
            out.append("ok")
        except RuntimeError as e:
            out.append(str(e)[:40])
        return out
    same(prog)


def test_hook_changing_dtype_and_wrong_shape():
    def prog(torch):
        out = []
        for make in (lambda g: g.sum(), lambda g: torch.ones(3), lambda g: g * 1.0):
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            y = x * 2
            y.register_hook(make)
            try:
                y.sum().backward()
                out.append(x.grad)
            except RuntimeError as e:
                out.append(str(e)[:30])
        return out
    same(prog)


def test_retain_graph_allows_repeat_and_frees_after():
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward(retain_graph=True)
        y.backward()
        out = [x.grad]
        try:
            y.backward()
        except RuntimeError as e:
            out.append(str(e)[:40])
        return out
    same(prog)


def _attempt(fn):
    """fn()'s value, or the type and first words of what it raised (the kind is in the text)."""
    try:
        return fn()
    except (RuntimeError, TypeError) as e:
        return f"{type(e).__name__}: {str(e)[:40]}"


def test_post_accumulate_hook_return_values_and_the_hooks_after():
    def prog(torch):
        out = []
        returns = (lambda t, w: None, lambda t, w: t, lambda t, w: 0, lambda t, w: (t,),
                   lambda t, w: torch.ones(3), lambda t, w: torch.ones(2, dtype=torch.float64),
                   lambda t, w: torch.ones(3, dtype=torch.float64), lambda t, w: t.grad * 10,
                   lambda t, w: w.detach())
        for first in returns:
            w = torch.tensor([1.0, 2.0], requires_grad=True)
            seen = []
            w.register_post_accumulate_grad_hook(lambda t, f=first, w=w: f(t, w))
            w.register_post_accumulate_grad_hook(
                lambda t, w=w, seen=seen: seen.append((t is w, t.tolist())))
            out.append([_attempt(lambda w=w: (w * 3).sum().backward()), seen, w.grad])
        return out
    same(prog)


def test_hooks_of_a_frozen_leaf_run_and_its_post_hooks_check_returns():
    def prog(torch):
        out = []
        for ret in (None, 0, 1.5):
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            seen = []
            x.register_hook(lambda g, seen=seen: seen.append(g.tolist()))
            x.register_post_accumulate_grad_hook(
                lambda t, seen=seen, ret=ret: seen.append(t.grad) or ret)
            y = (x * 3).sum()
            x.requires_grad_(False)
            out.append([_attempt(y.backward), seen, x.grad])
        return out
    same(prog)


def test_tensor_hook_returning_a_non_tensor_or_another_dtype():
    def prog(torch):
        out = []
        for ret in (lambda g: 0, lambda g: [g], lambda g: torch.ones(3, dtype=torch.float64)):
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            y = x * 2
            y.register_hook(ret)
            out.append([_attempt(y.sum().backward), x.grad])
        return out
    same(prog)


def test_a_view_written_through_itself_gets_its_node_at_once():
    def prog(torch):
        out = []
        for through in ("view", "base", "sibling"):
            log = []
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            u = torch.tensor([3.0, 4.0], requires_grad=True)
            y = x * 1
            v, s = y[0:1], y[1:2]
            {"view": v, "base": y, "sibling": s}[through].mul_(2.0)
            n = u.exp()
            a = v * 2
            v.grad_fn.register_prehook(lambda g, log=log: log.append("v"))
            n.grad_fn.register_prehook(lambda g, log=log: log.append("n"))
            (a.sum() + n.sum()).backward()
            out.append(log)
        return out
    assert same(prog) == [["n", "v"], ["v", "n"], ["v", "n"]]


def test_an_expanded_grad_refuses_accumulation():
    def prog(torch):
        out = []
        for grad in (torch.zeros(3).expand(2, 3), torch.zeros(2, 1).expand(2, 3),
                     torch.zeros(1, 3).expand(2, 3).t().t(), torch.zeros(2, 3)):
            x = torch.ones(2, 3, requires_grad=True)
            x.grad = grad
            out.append([_attempt(lambda x=x: (x * 2).sum().backward()), x.grad,
                        torch.autograd.grad((x * 3).sum(), x)])
        return out
    same(prog)


def test_backward_inputs_that_do_not_require_grad():
    def prog(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        c = torch.tensor([3.0, 4.0])
        h = x * 3
        y = (h * c).sum()
        out = [_attempt(lambda ins=ins: y.backward(inputs=ins, retain_graph=True))
               for ins in ([c], [x, c], [h, c], [x.detach()], [c * 2])]
        out.append(_attempt(lambda: torch.autograd.grad(y, [x, c], retain_graph=True)))
        return out + [x.grad, h.retains_grad]
    same(prog)


def test_two_accumulators_ready_at_once_run_in_their_senders_order():
    def prog(torch):
        log = []
        p = torch.tensor(1.0, requires_grad=True)
        q = torch.tensor(2.0, requires_grad=True)
        r = torch.tensor(3.0, requires_grad=True)
        for name, t in (("p", p), ("q", q), ("r", r)):
            t.register_hook(lambda g, name=name: log.append(name))
            t.register_post_accumulate_grad_hook(lambda t, name=name: log.append(name + "+"))
        (q * p + r.exp() * (r * q)).backward()
        torch.autograd.backward([r, p])
        torch.autograd.backward([q, (p * r).sum()])
        return log
    same(prog)


def test_three_or_more_accumulators_ready_at_once_agree_but_for_their_order():
    """UNSPEC-7: torch's heap runs four leaves as 0, 2, 1, 3 and refimpl as 0, 1, 2, 3; the calls
    and the gradients are the same."""
    def prog(torch):
        log = []
        leaves = [torch.tensor(float(i), requires_grad=True) for i in range(5)]
        for i, t in enumerate(leaves):
            t.register_hook(lambda g, i=i: log.append(i))
            t.register_post_accumulate_grad_hook(lambda t, i=i: log.append(i + 10))
        torch.autograd.backward(leaves)
        return [sorted(log), [t.grad for t in leaves],
                [log.index(i) < log.index(i + 10) for i in range(5)]]
    assert same(prog)[2] == [True] * 5
