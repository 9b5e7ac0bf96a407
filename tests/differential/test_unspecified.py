"""Differential tests around the open points: UNSPEC-1 to UNSPEC-6 (spec/unspecified.md).

What these clauses leave open is never logged; each program logs only what the rest of the spec
fixes around it (error kinds, values after `.grad` is reset, `name()`, values within tolerance),
so a failure means an engine got the specified part wrong.
"""
import pytest


def f64(torch, rows, requires_grad=False):
    return torch.tensor(rows, dtype=torch.float64, requires_grad=requires_grad)


@pytest.mark.clause("UNSPEC-1")
def test_after_a_failed_pass_only_reset_grads_are_compared(differential):
    def prog(torch, log):
        w = f64(torch, [1.0, 2.0], requires_grad=True)
        b = f64(torch, [0.5], requires_grad=True)
        h = w * 1
        loss = (h.exp() + h.sin()).sum() + (b * 3).sum()
        h.add_(1.0)                  # sin saved h: the pass fails partway
        log.attempt("failing pass", lambda: loss.backward())
        # w.grad and b.grad are unspecified here; reset them, then they are specified again
        w.grad = None
        b.grad = None
        loss = (w.exp() + w.sin()).sum() + (b * 3).sum()
        log.attempt("clean pass", lambda: loss.backward())
        log("grads", [w.grad, b.grad])
    differential(prog)


@pytest.mark.clause("UNSPEC-2")
def test_only_inplace_results_have_a_fixed_identity(differential):
    def prog(torch, log):
        x = f64(torch, [1.0, -2.0], requires_grad=True)
        y = x * 1
        t = torch.zeros(2)
        same = {
            "add_": y.add_(1.0) is y, "mul_": y.mul_(2.0) is y, "clamp_": y.clamp_(-3.0, 3.0) is y,
            "zero_ on a plain tensor": t.zero_() is t,
        }
        z = y
        z += 1.0
        z **= 2
        same["augmented"] = z is y
        log("in-place results", same)
        log("name", [y.grad_fn.name(), y.grad_fn.name() == y.grad_fn.name()])
        log("detach values", [x.detach(), x.data, x.detach().requires_grad])
    differential(prog)


@pytest.mark.clause("UNSPEC-3")
def test_aliasing_choices_do_not_change_specified_values(differential):
    def prog(torch, log):
        x = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        g = f64(torch, [[1.0, 0.0], [0.0, 1.0]])
        (x * 1).backward(g)
        log("x.grad from gradient=", x.grad)
        old = x.grad
        for _ in range(2):
            (x * 2).sum().backward()
        log("x.grad accumulated", x.grad)   # old's value is unspecified: not logged
        log("old is a tensor", old is not None)
        m = f64(torch, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        log("reshape values", [m.reshape(3, 2), m.t().reshape(6), m[:, 1:].reshape(4)])
        v = m.view(6)                       # a true view: sharing is specified (VER-4)
        v[0] = 100.0
        log("m after view write", m)
    differential(prog)


@pytest.mark.clause("UNSPEC-4")
def test_float32_results_agree_within_tolerance(differential):
    def prog(torch, log):
        torch.manual_seed(0)
        x = torch.arange(1000.0) / 7.0
        log("float32 sums", [x.sum(), x.mean(), (x * x).sum() / 1e6])
        w = torch.tensor(0.3, requires_grad=True)
        y = sum(w * k for k in range(1, 11)) + (w * w).exp()
        y.backward()
        log("grad summed over many paths", w.grad)
        a = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], requires_grad=True)
        (a @ a.t()).tanh().sum().backward()
        log("float32 matmul grad", a.grad)
    differential(prog)


@pytest.mark.clause("UNSPEC-5")
def test_errors_compare_by_kind_only(differential):
    def prog(torch, log):
        w = torch.ones(2, 3, requires_grad=True)
        log.attempt("leaf write", lambda: w.t().fill_(0.0))
        h = w * 1
        y = (h * h).sum()
        for _ in range(4):
            h.mul_(1.0)                     # torch's text quotes the version (4): unspecified
        log.attempt("version", lambda: y.backward())
        z = (w * w).sum()
        z.backward()
        log.attempt("freed", lambda: z.backward())
        log.attempt("non-scalar", lambda: (w * 2).backward())
    differential(prog)


@pytest.mark.clause("UNSPEC-6")
def test_names_are_compared_not_reprs(differential):
    def prog(torch, log):
        x = f64(torch, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        outs = [x.exp(), x.t(), x @ x, x.sum(), x[0], x.relu(), x / 2]
        log("names", [o.grad_fn.name() for o in outs])
        log("reprs are text", [isinstance(repr(o.grad_fn), str) and isinstance(str(o), str)
                               for o in outs])
    differential(prog)
