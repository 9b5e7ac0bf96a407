"""Differential tests for graph freeing and `retain_graph`: FREE-1 to FREE-7 (spec/free.md).

Each program probes its clause from another angle than the spec example (other ops, float64,
partial passes, shared subgraphs, loops) and logs gradients and error kinds. After a backward that
raised, no program logs a leaf's `.grad` (UNSPEC-1).
"""
import pytest


def f64(torch, rows, requires_grad=False):
    return torch.tensor(rows, dtype=torch.float64, requires_grad=requires_grad)


@pytest.mark.clause("FREE-1")
def test_second_pass_raises_and_structure_survives(differential):
    def prog(torch, log):
        w = f64(torch, [[0.1, 0.2], [0.3, -0.4]], requires_grad=True)
        loss = (w @ w).tanh().mean()
        log.attempt("first", lambda: loss.backward())
        log("w.grad", w.grad)
        node = loss.grad_fn
        log("nodes after freeing", [node.name(), node.next_functions[0][0].name()])
        log.attempt("second", lambda: loss.backward())
        log.attempt("autograd.grad after backward", lambda: torch.autograd.grad(loss, w))
    differential(prog)


@pytest.mark.clause("FREE-2")
def test_retain_graph_alternating_with_gradients(differential):
    def prog(torch, log):
        w = f64(torch, [0.5, -1.0, 2.0], requires_grad=True)
        y = (w.sigmoid() * w).sum()
        for g in (1.0, 2.0, -0.5):
            y.backward(torch.tensor(g, dtype=torch.float64), retain_graph=True)
            log(f"after gradient {g}", w.grad)
        log.attempt("grad with retain", lambda: torch.autograd.grad(y, w, retain_graph=True))
        log.attempt("last without retain", lambda: y.backward())
        log("w.grad", w.grad)
        log.attempt("after last", lambda: y.backward())
    differential(prog)


@pytest.mark.clause("FREE-3")
def test_which_graphs_survive_a_second_pass(differential):
    def prog(torch, log):
        def twice(label, build):
            x = f64(torch, [[0.5, -1.5], [2.0, 0.25]], requires_grad=True)
            out = build(x).sum()
            out.backward()
            if log.attempt(label, lambda: out.backward() or True):
                log(label + " grad", x.grad)

        def setitem_whole(x):
            y = x + 0
            y[:] = 2.0
            return y

        def setitem_row(x):
            y = x + 0
            y[0] = 2.0
            return y

        graphs = {
            "add sub neg": lambda x: -(x + x) - 1.0, "sum mean": lambda x: x.sum(0) + x.mean(),
            "views": lambda x: x.t().reshape(4).unsqueeze(0).expand(2, 4)[1, 1:],
            "clone add_": lambda x: x.clone().add_(x), "zero_ fill_": lambda x: (x + 0).zero_(),
            "setitem whole": setitem_whole, "setitem row": setitem_row,
            "view add_": lambda x: (x + 0).view(4).add_(1.0),
            "mul number": lambda x: x * 0.5, "div number": lambda x: x / 4,
            "number minus": lambda x: 3.0 - x, "number over": lambda x: 1.0 / x,
            "mul tensors": lambda x: x * x, "matmul": lambda x: x @ x, "relu": lambda x: x.relu(),
        }
        for label, build in graphs.items():
            twice(label, build)
    differential(prog)


@pytest.mark.clause("FREE-4")
def test_autograd_grad_frees_only_what_it_runs(differential):
    def prog(torch, log):
        w = f64(torch, [1.0, 2.0], requires_grad=True)
        h = w.sin()
        m = h * h
        out = (m * 3.0).sum()
        log("grad to m", torch.autograd.grad(out, m, retain_graph=True))
        log("grad to h", torch.autograd.grad(out, h))       # runs and frees h*h and *3
        log.attempt("grad to h again", lambda: torch.autograd.grad(out, h))
        w2 = f64(torch, [1.0, 2.0], requires_grad=True)
        h2 = w2.exp()
        out2 = (h2 - 1.0).sum()
        log("partial", torch.autograd.grad(out2, h2))       # sub saves nothing; exp not run
        log.attempt("full backward", lambda: out2.backward())
        log("w2.grad", w2.grad)
    differential(prog)


@pytest.mark.clause("FREE-5")
def test_shared_trunk_with_three_heads(differential):
    def prog(torch, log):
        w = f64(torch, [[1.0, -1.0], [0.5, 2.0]], requires_grad=True)
        trunk = (w @ w).sigmoid()
        heads = [trunk.sum(), (trunk * trunk).sum(), trunk.mean()]
        log.attempt("head 0 retained", lambda: heads[0].backward(retain_graph=True))
        log.attempt("head 2 not retained", lambda: heads[2].backward())
        log("w.grad", w.grad)
        log.attempt("head 1 after trunk freed", lambda: heads[1].backward())
        v = f64(torch, [1.0, 2.0], requires_grad=True)
        shared = v + 1.0                 # saves nothing: freeing it costs nothing
        a, b = (shared * 2.0).sum(), (shared - 1.0).sum()
        a.backward()
        log.attempt("second head over an add trunk", lambda: b.backward())
        log("v.grad", v.grad)
    differential(prog)


@pytest.mark.clause("FREE-6")
def test_training_loop_rebuilds_each_step(differential):
    def prog(torch, log):
        w = f64(torch, [[0.5, -0.5], [1.0, 0.25]], requires_grad=True)
        x = f64(torch, [[1.0, 2.0], [3.0, 4.0]])
        for step in range(3):
            loss = ((x @ w).relu() ** 2).mean()
            loss.backward()
            log(f"step {step} grad", w.grad)
            with torch.no_grad():
                w -= 0.05 * w.grad
            w.grad = None
        log.attempt("stale loss", lambda: loss.backward())
        fresh = ((x @ w).relu() ** 2).mean()
        log.attempt("fresh loss", lambda: fresh.backward())
        log("w.grad", w.grad)
    differential(prog)


@pytest.mark.clause("FREE-7")
def test_default_retain_graph_frees_for_every_entry_point(differential):
    def prog(torch, log):
        def build():
            w = f64(torch, [0.5, 1.5], requires_grad=True)
            return w, (w.cos() * w).sum()

        w, y = build()
        torch.autograd.backward([y], retain_graph=None)
        log.attempt("after autograd.backward(None)", lambda: y.backward())
        w, y = build()
        y.backward(retain_graph=False)
        log.attempt("after backward(False)", lambda: torch.autograd.grad(y, w))
        w, y = build()
        log("grad default", torch.autograd.grad(y, w))
        log.attempt("after grad default", lambda: torch.autograd.grad(y, w))
        w, y = build()
        y.backward(retain_graph=True)
        y.backward()
        log("two passes", w.grad)
    differential(prog)
