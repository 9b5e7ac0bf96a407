"""pow and `__rpow__` of integer and bool tensors, where numpy's integer power differs from
torch's kernel: no spec kind, so errors compare by message (GRAPH-3)."""
import pytest

INTEGERS = {(): -2, (7,): [-3, -2, -1, 0, 1, 2, 3], (2, 3): [[-3, -1, 0], [1, 2, -2]]}
BOOLS = {(): False, (2,): [True, False], (2, 2): [[True, False], [False, True]]}


def _ipow(t, e):
    t **= e
    return t


@pytest.mark.clause("GRAPH-3")
@pytest.mark.parametrize("shape", list(INTEGERS))
def test_a_number_to_an_integer_tensors_power_follows_torchs_integer_kernel(differential,
                                                                            shape):
    """A Python int to the power of an int64 tensor with negative elements computes as torch's
    integer kernel does: 1 for base 1, -1 or 1 by parity for base -1, 0 for any other base
    (numpy refuses negative integer powers); a float base computes in float32."""
    def prog(torch, log):
        for dt in ("int64", "bool"):
            t = torch.tensor(INTEGERS[shape]).to(getattr(torch, dt))
            for base in (2, -2, 1, -1, 0, 3, True, False, 2.0, 0.5):
                for label, form in {"base ** t": lambda t=t, b=base: b ** t,
                                    "base ** -t": lambda t=t, b=base: b ** -t.long()}.items():
                    r = log.attempt(f"{dt} {base!r}: {label}", form)
                    if r is not None:
                        log(f"{dt} {base!r}: {label} result", [str(r.dtype), r.tolist()])
    differential(prog)


@pytest.mark.clause("GRAPH-3")
@pytest.mark.parametrize("shape", list(BOOLS))
def test_a_bool_tensor_to_a_bool_power_is_a_bool(differential, shape):
    """A bool tensor to the power True is itself (a copy), to False all True, a bool in every
    form; a Python bool to a bool tensor's power is refused, as torch has no bool pow kernel
    (NotImplementedError); other numbers promote."""
    def prog(torch, log):
        b = torch.tensor(BOOLS[shape])
        for e in (True, False, 1, 0, 2, 1.5):
            forms = {"b ** e": lambda e=e: b ** e, "b.pow(e)": lambda e=e: b.pow(e),
                     "torch.pow(b, e)": lambda e=e: torch.pow(b, e),
                     "b.pow_(e)": lambda e=e: b.clone().pow_(e),
                     "b **= e": lambda e=e: _ipow(b.clone(), e), "e ** b": lambda e=e: e ** b}
            for label, form in forms.items():
                r = log.attempt(f"{e!r}: {label}", form)
                if r is not None:
                    log(f"{e!r}: {label} result", [str(r.dtype), r.tolist(), r is b])
        log("b after", b)
    differential(prog)
