"""refimpl.nn against torch 2.13.0: the seed article's three-layer model (seed 004, "pytorch理解")
runs unchanged under `import refimpl as torch` and prints what torch prints, and so do programs
around Module, Parameter and Linear: the graph nn.Linear records for each input rank and layout,
with and without bias (AddmmBackward0, ViewBackward0, MmBackward0, SqueezeBackward4,
UnsafeViewBackward0, AddBackward0 over TBackward0), what it saves, reprs, parameter order,
zero_grad, and torch's errors. Random initial values differ by design (UNSPEC-4): the programs
print shapes of those, or set the parameters under no_grad before printing values."""
import math
import textwrap

import pytest

import refimpl

from ._twin import same
from .test_seeds import run

# helpers every program gets: the graph below a tensor, and an error printed instead of raised
PRELUDE = '''
nn = torch.nn
def graph(fn):
    if fn is None:
        return None
    if fn.name() == "torch::autograd::AccumulateGrad":
        return "Acc"
    return [fn.name(), [graph(n) for n, _ in fn.next_functions]]
def attempt(f):
    try:
        return f()
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}")
def set_params(module):  # values exact in float32, so that both engines' sums agree exactly
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.arange(p.numel()).reshape(p.shape) * 0.125 - 0.25 * i)
'''

# the article's model, as it stands there (seed 004, lines 7-20)
SIMPLE_NET = '''
class simpleNet(nn.Module):

    def __init__(self, in_dim, n_hidden_1, n_hidden_2, out_dim):
        super().__init__()
        self.layer1 = nn.Linear(in_dim, n_hidden_1)
        self.layer2 = nn.Linear(n_hidden_1, n_hidden_2)
        self.layer3 = nn.Linear(n_hidden_2, out_dim)

    def forward(self, x):
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)

        return x
'''

SEED_DRIVER = SIMPLE_NET + '''
net = simpleNet(4, 3, 3, 2)
print(net)
print([p.shape for p in net.parameters()])
print([name for name, _ in net.named_parameters()])
print([(p.is_leaf, p.requires_grad, p.grad, p.grad_fn) for p in net.parameters()])
print(net.layer1, net.layer3.bias.shape)
set_params(net)
print(net.layer2.weight)
x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 0.0, 2.0]])
y = net(x)
print(y)
print(graph(y.grad_fn))
loss = (y * y).mean()
print(loss)
loss.backward()
for name, p in net.named_parameters():
    print(name, p.grad)
net.zero_grad()
print([p.grad for p in net.parameters()])
print(net(torch.ones(4)), net(torch.ones(2, 1, 4)))
'''

PROGRAMS = {
    "ranks and layouts": '''
        for bias in (True, False):
            lin = nn.Linear(4, 3, bias=bias)
            set_params(lin)
            xs = {"1-D": lambda: torch.arange(4) * 0.5 + 1.0,
                  "2-D": lambda: torch.arange(8).reshape(2, 4) * 0.5 - 1.0,
                  "3-D": lambda: torch.arange(24).reshape(3, 2, 4) * 0.25,
                  "4-D": lambda: torch.arange(48).reshape(2, 3, 2, 4) * 0.125,
                  "1-D strided": lambda: (torch.arange(8) * 0.5)[::2],
                  "2-D transposed": lambda: torch.arange(8).reshape(4, 2).t() * 1.0,
                  "3-D transposed": lambda: (torch.arange(24).reshape(3, 4, 2) * 0.5)
                                            .transpose(1, 2),
                  "4-D transposed": lambda: (torch.arange(48).reshape(2, 3, 4, 2) * 1.0)
                                            .transpose(-1, -2)}
            for name, make in xs.items():
                for x_needs in (False, True):
                    x = make().detach().requires_grad_(x_needs)
                    y = lin(x)
                    print(name, bias, x_needs, y, y.shape, y._version, y.is_leaf)
                    print(graph(y.grad_fn))
                    (y * y).sum().backward()
                    print(lin.weight.grad, lin.bias.grad if bias else None, x.grad)
                    lin.zero_grad()
    ''',
    "saves: a write after the forward": '''
        for x_needs in (False, True):
            for target in ("weight", "bias", "x"):
                for shape in ((2, 4), (4,), (2, 2, 4), "3-D transposed"):
                    lin = nn.Linear(4, 3)
                    set_params(lin)
                    if shape == "3-D transposed":  # matmul, then the bias added in place
                        x = (torch.ones(2, 4, 2) * 0.5 + 0.25).transpose(1, 2).detach()
                    else:
                        x = torch.ones(shape) * 0.5 + torch.arange(4) * 0.25
                    x.requires_grad_(x_needs)
                    y = lin(x)
                    with torch.no_grad():
                        {"weight": lin.weight, "bias": lin.bias, "x": x}[target].mul_(2.0)
                    print(x_needs, target, shape, graph(y.grad_fn))
                    attempt(lambda: y.sum().backward())
                    print(lin.weight.grad, lin.bias.grad, x.grad)
    ''',
    "bias=False, dtype, device": '''
        lin = nn.Linear(3, 2, bias=False)
        print(lin, lin.bias, [n for n, _ in lin.named_parameters()])
        set_params(lin)
        y = lin(torch.tensor([[1.0, -1.0, 2.0]]))
        print(y, graph(y.grad_fn))
        d = nn.Linear(2, 2, dtype=torch.float64)
        print(d.weight.dtype, d.bias.dtype, d.weight.shape)
        set_params(d)
        print(d(torch.tensor([0.5, 0.25], dtype=torch.float64)))
        print(nn.Linear(2, 2, device="cpu").weight.device)
        print(nn.Linear(0, 2).weight.shape, nn.Linear(0, 2).bias)
    ''',
    "errors": '''
        for bias in (True, False):
            lin = nn.Linear(4, 3, bias=bias)
            for shape in ((4,), (2, 4), (5, 2, 4)):
                attempt(lambda: lin(torch.ones(shape, dtype=torch.float64)))
                attempt(lambda: lin(torch.ones(shape[:-1] + (5,))))
            attempt(lambda: lin(torch.tensor(1.0)))
            attempt(lambda: lin(torch.ones(4, 2, dtype=torch.float64).t()))
        attempt(lambda: nn.Module()(torch.ones(1)))
        attempt(lambda: nn.Parameter(torch.tensor([1, 2])))
        lin = nn.Linear(2, 2)
        attempt(lambda: setattr(lin, "weight", torch.ones(2, 2)))
        attempt(lambda: setattr(lin, "weight", 3))
        attempt(lambda: lin.register_parameter("extra", torch.ones(1)))
        attempt(lambda: lin.missing)
        holder = nn.Module()
        holder.child = nn.Linear(1, 1)
        attempt(lambda: setattr(holder, "child", 5))
        class Early(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(torch.ones(1))
        attempt(Early)
    ''',
    "Parameter": '''
        t = torch.tensor([1.0, 2.0])
        p = nn.Parameter(t)
        print(p)
        print(repr(p), str(p) == repr(p), type(p).__name__, isinstance(p, torch.Tensor))
        print(p.is_leaf, p.requires_grad, p.grad_fn, p.grad, p._version)
        t.add_(1.0)  # the same storage and version counter, as detach() shares them
        print(p, p._version)
        q = p * 2
        print(type(q).__name__, q, type(p.detach()).__name__, type(p.data).__name__)
        print(nn.Parameter(torch.tensor(3.0)), nn.Parameter())
        print(nn.Parameter(torch.tensor([1, 2]), requires_grad=False))
        frozen = nn.Parameter(torch.ones(2), requires_grad=False)
        print(frozen, frozen.requires_grad)
        made = torch.ones(2, requires_grad=True) * 3
        leaf = nn.Parameter(made)
        print(leaf, leaf.is_leaf, leaf.grad_fn)
        print(p.requires_grad_(False) is p, p)
        print(p.requires_grad_(True) is p, p)
        w = nn.Parameter(torch.ones(2, 2))
        print(type(w.t()).__name__, w.t().grad_fn.name(), type(w[0]).__name__)
        with torch.no_grad():
            r = w.mul_(3.0)
        print(r is w, w, w._version)
    ''',
    "registration order": '''
        class Inner(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(1))
                self.lin = nn.Linear(2, 2)
            def forward(self, x):
                return self.lin(x) * self.scale
        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.first = nn.Linear(2, 2)
                self.plain = torch.ones(2, requires_grad=True)
                self.own = nn.Parameter(torch.zeros(2))
                self.inner = Inner()
                self.shared = self.first
                self.empty = nn.Module()
                self.nothing = None
            def forward(self, x):
                return self.shared(self.inner(self.first(x))) + self.own + self.plain
        m = Outer()
        print(m)
        print([n for n, _ in m.named_parameters()])
        print([n for n, _ in m.named_parameters(recurse=False)])
        print([p.shape for p in m.parameters()], len(list(m.parameters())))
        print([n for n, _ in m.named_modules()])
        print(type(m.plain).__name__, m.plain.requires_grad, m.nothing)
        m.inner = None
        print(m, [n for n, _ in m.named_parameters()])
        m.inner = Inner()
        del m.own, m.empty
        print([n for n, _ in m.named_parameters()], attempt(lambda: m.own), m)
        m.own = nn.Parameter(torch.zeros(2))
        set_params(m)
        out = m(torch.tensor([[1.0, 2.0]]))
        out.sum().backward()
        print(out, m.plain.grad)
        print([(n, p.grad) for n, p in m.named_parameters()])
    ''',
    "zero_grad": '''
        lin = nn.Linear(3, 2)
        set_params(lin)
        x = torch.tensor([[1.0, 0.5, -1.0], [2.0, 0.0, 1.0]])
        lin(x).sum().backward()
        lin(x).sum().backward()  # accumulates
        g = lin.weight.grad
        print(g, g._version, lin.bias.grad)
        lin.zero_grad(set_to_none=False)
        print(lin.weight.grad, lin.weight.grad is g, g._version, lin.bias.grad)
        print(lin.weight.grad.requires_grad, lin.weight.grad.grad_fn)
        lin.zero_grad()
        print(lin.weight.grad, lin.bias.grad)
        lin.zero_grad(set_to_none=False)  # no grads: nothing to do
        print(lin.weight.grad)
        lin.weight.requires_grad_(False)
        y = lin(x)
        print(graph(y.grad_fn))
        y.sum().backward()
        print(lin.weight.grad, lin.bias.grad)
        lin.weight.requires_grad_(True)
        (lin(x) ** 2).sum().backward(create_graph=True)
        print(lin.weight.grad.requires_grad, lin.weight.grad.grad_fn is not None)
        lin.zero_grad(set_to_none=False)
        print(lin.weight.grad, lin.weight.grad.requires_grad, lin.weight.grad.grad_fn)
    ''',
    "addmm and functional.linear": '''
        F = torch.nn.functional
        b = torch.tensor([1.0, -1.0, 0.5], requires_grad=True)
        m1 = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        m2 = torch.tensor([[0.5, 0.0, -1.0], [1.0, 2.0, 0.25]], requires_grad=True)
        for bias in (b, b.reshape(1, 3), b[0]):
            y = torch.addmm(bias, m1, m2)
            print(y, graph(y.grad_fn))
            (y * y).sum().backward()
            print(b.grad, m1.grad, m2.grad)
        attempt(lambda: torch.addmm(b, m1, m2.double()))
        attempt(lambda: torch.addmm(b.double(), m1, m2))
        attempt(lambda: torch.addmm(b, m1[0], m2))
        attempt(lambda: torch.addmm(b, m1, m1))
        attempt(lambda: torch.addmm(torch.ones(4), m1, m2))
        w = torch.tensor([[0.5, 1.0], [-1.0, 0.25], [2.0, 0.0]], requires_grad=True)
        y = F.linear(m1, w, b)
        print(y, graph(y.grad_fn))
        y = F.linear(m1, w)
        print(y, graph(y.grad_fn))
    ''',
}


def _program(body: str) -> str:
    return PRELUDE + textwrap.dedent(body) + '\nprint("end")\n'


def _same_output(source: str) -> str:
    want = run(source, __import__("torch"))
    got = run(source, refimpl)
    assert want.endswith("end\n"), f"the program stopped early under torch:\n{want}"
    assert got == want, f"torch printed:\n{want}\nrefimpl printed:\n{got}"
    return want


def test_the_seed_model_prints_what_torch_prints():
    printed = _same_output(_program(SEED_DRIVER))
    assert "simpleNet(\n  (layer1): Linear(in_features=4, out_features=3, bias=True)\n" in printed
    assert "grad_fn=<AddmmBackward0>" in printed and "[None, None, None, None, None, None]" \
        in printed


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_prints_what_torch_prints(name):
    _same_output(_program(PROGRAMS[name]))


def test_the_graph_per_input_rank():
    """The names torch 2.13.0 records for nn.Linear, x requiring grad, written out."""
    printed = _same_output(_program('''
        for bias in (True, False):
            lin = nn.Linear(4, 3, bias=bias)
            for shape in ((4,), (2, 4), (5, 2, 4)):
                print(graph(lin(torch.ones(shape, requires_grad=True)).grad_fn))
    '''))
    acc, t = "'Acc'", "['TBackward0', ['Acc']]"
    view_of_acc = "['ViewBackward0', ['Acc']]"
    assert printed.splitlines()[:6] == [
        f"['ViewBackward0', [['AddmmBackward0', [{acc}, {view_of_acc}, {t}]]]]",
        f"['AddmmBackward0', [{acc}, {acc}, {t}]]",
        f"['ViewBackward0', [['AddmmBackward0', [{acc}, {view_of_acc}, {t}]]]]",
        f"['SqueezeBackward4', [['MmBackward0', [['UnsqueezeBackward0', ['Acc']], {t}]]]]",
        f"['MmBackward0', [{acc}, {t}]]",
        f"['UnsafeViewBackward0', [['MmBackward0', [{view_of_acc}, {t}]]]]",
    ]


def _second_derivatives(torch):
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[0.5, -1.0, 0.25], [1.5, 0.75, -0.5]]))
        lin.bias.copy_(torch.tensor([0.1, -0.2]))
    out = []
    for x in (torch.tensor([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]], requires_grad=True),
              torch.tensor([1.0, -2.0, 0.5], requires_grad=True)):
        y = lin(x).tanh()
        gx, gw, gb = torch.autograd.grad((y * y).sum(), (x, lin.weight, lin.bias),
                                         create_graph=True)
        out.append([gx, gw, gb, gx.requires_grad, gw.requires_grad, gb.requires_grad])
        v = (gx * gx).sum() + (gw * gw).sum() + (gb * 1.5).sum()
        out.append(list(torch.autograd.grad(v, (x, lin.weight, lin.bias))))
    return out


def test_linear_under_create_graph():
    """DOUBLE-1, DOUBLE-2: addmm's formula records the gradient's graph; second derivatives of
    x, weight and bias equal torch's for a 2-D and a 1-D input."""
    want = same(_second_derivatives)
    assert want[0][3:] == [True, True, True]


def test_initial_values_lie_within_torchs_bounds_and_repeat_under_a_seed():
    """UNSPEC-4: refimpl's own draws, from torch's ranges: weight and bias within
    1/sqrt(in_features), spread over it (not all zero, not all one sign)."""
    refimpl.manual_seed(3)
    lin = refimpl.nn.Linear(16, 8)
    weight, bias = lin.weight.tolist(), lin.bias.tolist()
    values = [v for row in weight for v in row] + bias
    bound = 1 / math.sqrt(16)
    assert all(-bound <= v < bound for v in values)
    assert min(values) < -bound / 2 and max(values) > bound / 2
    refimpl.manual_seed(3)
    again = refimpl.nn.Linear(16, 8)
    assert again.weight.tolist() == weight and again.bias.tolist() == bias
    assert refimpl.nn.Linear(16, 8).weight.tolist() != weight
    assert lin.weight.dtype is refimpl.float32


def test_rand_draws_in_the_unit_interval():
    refimpl.manual_seed(0)
    a = refimpl.rand(200, dtype=refimpl.float64).tolist()
    b = refimpl.rand(2, 3, requires_grad=True)
    assert all(0.0 <= v < 1.0 for v in a) and len(set(a)) == 200
    assert tuple(b.shape) == (2, 3) and b.requires_grad and b.is_leaf
    refimpl.manual_seed(0)
    assert refimpl.rand(200, dtype=refimpl.float64).tolist() == a


def test_addmm_scales_are_out_of_scope():
    b, m = refimpl.ones(2), refimpl.ones(2, 2)
    with pytest.raises(NotImplementedError, match="beta = alpha = 1"):
        refimpl.addmm(b, m, m, beta=0.5)
    with pytest.raises(NotImplementedError, match="beta = alpha = 1"):
        refimpl.addmm(b, m, m, alpha=2)
    assert refimpl.addmm(b, m, m, beta=1, alpha=1).tolist() == [[3.0, 3.0], [3.0, 3.0]]
