"""The backward engine against torch from angles the spec examples do not take: execution order
and ties (HOOK-14), hook kinds on one node (HOOK-2, HOOK-8, HOOK-13, HOOK-15, RETAIN-5), captures
in autograd.grad (API-6, API-10, HOOK-16), backward(inputs=) (API-11), several roots (API-12) and
the freeing of a shared subgraph (FREE-5)."""
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
