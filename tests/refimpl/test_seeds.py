"""The seed programs (/work/shared/seeds, see their README) print the same under refimpl as under
torch 2.13.0: the l1..l4 example with retain_grad and hooks, y = (x + w) * (w + 1), the in-place
and leaf examples, backward twice, and the RNN cell (mm, tanh, a name bound again). Printing
covers tensor reprs, grads, grad_fn names, is_leaf and _version; errors print their type and full
message."""
import contextlib
import io
import textwrap

import pytest
import torch

import refimpl

L1_L4 = """
input = torch.ones([2, 2], requires_grad=False)
w1 = torch.tensor(2.0, requires_grad=True)
w2 = torch.tensor(3.0, requires_grad=True)
w3 = torch.tensor(4.0, requires_grad=True)
l1 = input * w1
l2 = l1 + w2
l3 = l1 * w3
l4 = l2 * l3
loss = l4.mean()
"""

SEEDS = {
    "exp": """
        a = torch.tensor(2.0, requires_grad=True)
        b = a.exp()
        print(b)
    """,
    "l1..l4": L1_L4 + """
        print(w1.data, w1.grad, w1.grad_fn)
        print(l1.data, l1.grad, l1.grad_fn.name())
        print(loss.data, loss.grad, loss.grad_fn.name())
        loss.backward()
        print(w1.grad, w2.grad, w3.grad)
        print(l1.grad, l2.grad, l3.grad, l4.grad, loss.grad)
    """,
    "leaves": """
        a = torch.ones([2, 2], requires_grad=True)
        print(a.is_leaf)
        b = a + 2
        print(b.is_leaf)
    """,
    "retain_grad": L1_L4 + """
        l1.retain_grad()
        l4.retain_grad()
        loss.retain_grad()
        loss.backward()
        print(loss.grad)
        print(l4.grad)
        print(l1.grad)
    """,
    "register_hook": L1_L4 + """
        l1.register_hook(lambda grad: print('l1 grad: ', grad))
        l4.register_hook(lambda grad: print('l4 grad: ', grad))
        loss.register_hook(lambda grad: print('loss grad: ', grad))
        loss.backward()
        print(loss.grad)
    """,
    "004 grads of l2 l3": L1_L4 + """
        for t in (l1, l2, l3, l4):
            t.retain_grad()
        loss.backward()
        print(l1.grad, l2.grad, l3.grad, l4.grad)
    """,
    "not in place": """
        a = torch.tensor([3.0, 1.0])
        a = a.exp()
        print(a)
        a = torch.tensor([3.0, 1.0])
        a[0] = 10
        print(a)
    """,
    "version": """
        a = torch.tensor([1.0, 3.0], requires_grad=True)
        b = a + 2
        print(b._version)
        loss = (b * b).mean()
        b[0] = 1000.0
        print(b._version)
        loss.backward()
    """,
    "version not needed": """
        a = torch.tensor([1.0, 3.0], requires_grad=True)
        b = a + 2
        loss = (b + 1).mean()
        b[0] = 1000.0
        print(b._version)
        loss.backward()
        print(a.grad)
    """,
    "leaf setitem": """
        a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
        print(a, a.is_leaf)
        a[:] = 0
    """,
    "leaf add_": """
        a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
        a.add_(10.0)
    """,
    "leaf iadd": """
        a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
        a += 10.0
    """,
    "data.fill_": """
        a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
        print(a, a.is_leaf)
        a.data.fill_(10.0)
        print(a, a.is_leaf)
        loss = (a * a).mean()
        loss.backward()
        print(a.grad)
    """,
    "detach().fill_": """
        a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
        a.detach().fill_(10.0)
        print(a, a.is_leaf, a._version)
        loss = (a * a).mean()
        loss.backward()
        print(a.grad)
    """,
    "no_grad setitem": """
        a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
        with torch.no_grad():
            a[:] = 10.0
        print(a, a.is_leaf)
        loss = (a * a).mean()
        loss.backward()
        print(a.grad)
    """,
    "modify after use": """
        a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
        loss = (a * a).mean()
        a.data.fill_(10.0)
        loss.backward()
        print(a.grad)
        b = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
        loss = (b * b).mean()
        b.detach().fill_(10.0)
        loss.backward()
    """,
    "backward twice": """
        a = torch.tensor([3.0, 1.0], requires_grad=True)
        b = a * a
        loss = b.mean()
        loss.backward()
        print(a.grad)
        loss.backward()
    """,
    "fresh graph": """
        a = torch.tensor([3.0, 1.0], requires_grad=True)
        b = a * a
        loss = b.mean()
        loss.backward()
        a = torch.tensor([3.0, 1.0], requires_grad=True)
        b = a * a
        loss = b.mean()
        loss.backward()
        print(a.grad)
    """,
    "y=(x+w)(w+1)": """
        w = torch.tensor([1.0], requires_grad=True)
        x = torch.tensor([2.0], requires_grad=True)
        a = torch.add(w, x)
        a.retain_grad()
        b = torch.add(w, 1)
        y = torch.mul(a, b)
        y.backward()
        print(w.grad, x.grad, a.grad)
        print(a.grad_fn.name(), b.grad_fn.name(), y.grad_fn.name())
        print(w.is_leaf, x.is_leaf, a.is_leaf, b.is_leaf, y.is_leaf)
        print(a, b, y)
    """,
    "rnn cell": """
        W_h = torch.tensor([[0.5, -0.25], [0.125, 0.75]], requires_grad=True)
        W_x = torch.tensor([[1.0, -1.0, 0.5], [0.0, 0.25, -0.5]], requires_grad=True)
        x = torch.tensor([[0.2, 0.4, -0.6]])
        prev_h = torch.tensor([[1.0, -1.0]])
        h2h = torch.mm(W_h, prev_h.t())
        i2h = torch.mm(W_x, x.t())
        next_h = h2h + i2h
        next_h = next_h.tanh()
        loss = next_h.sum()
        loss.backward()
        print(next_h, loss)
        print(next_h.grad_fn.name(), next_h.grad_fn.next_functions[0][0].name())
        print(W_h.grad, W_x.grad)
    """,
    "dynamic control flow": """
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        for step in range(2):
            y = x * 2 if x.sum() > 0 else x * x
            y.sum().backward()
            print(y.grad_fn.name(), x.grad)
            with torch.no_grad():
                x -= 3.0
    """,
}


def run(source: str, lib) -> str:
    out = io.StringIO()
    env = {"torch": lib}
    with contextlib.redirect_stdout(out):
        try:
            exec(textwrap.dedent(source), env)
        except Exception as exc:  # the seeds end on an error on purpose
            print(f"{type(exc).__name__}: {exc}")
    return out.getvalue()


@pytest.mark.parametrize("name", list(SEEDS))
def test_seed_prints_the_same(name):
    want = run(SEEDS[name], torch)
    got = run(SEEDS[name], refimpl)
    assert got == want, f"torch printed:\n{want}\nrefimpl printed:\n{got}"
