"""Compare refimpl with torch (CPU) in one process and print ratios (benchmarks/README.md).

- per-op overhead: a chain of 1,000 elementwise ops on 4-element tensors, forward + backward;
- throughput: a 512-wide, 3-layer tanh MLP on a batch of 512, forward + backward.

Run: python benchmarks/bench_refimpl.py [--repeat N]. Targets: overhead ratio <= 1.3 (refimpl
time / torch time), throughput ratio >= 0.9 (torch time / refimpl time). No test asserts on times.
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, when set, slow numpy's BLAS; this script unsets both for
itself (before numpy loads) and says so.
"""
from __future__ import annotations

import os

_unset = [k for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if os.environ.pop(k, None)]

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

import refimpl  # noqa: E402


def chain(lib, n_ops=1000):
    x = lib.tensor([0.1, 0.2, 0.3, 0.4], requires_grad=True)
    y = x
    for _ in range(n_ops // 4):  # four cheap ops per round, no growth
        y = y * 1.0001
        y = y + 0.001
        y = y.sin()
        y = y - 0.001
    y.sum().backward()
    return x.grad


def mlp(lib, width=512, batch=512, layers=3):
    lib.manual_seed(0)
    ws = [(lib.randn(width, width) * (1 / width ** 0.5)).requires_grad_() for _ in range(layers)]
    x = lib.randn(batch, width)

    def step():
        h = x
        for w in ws:
            h = (h @ w).tanh()
        h.mean().backward()
    return step


def best_of(fn_torch, fn_ref, repeat):
    """Best times of the two, measured alternately so that load from elsewhere hits both."""
    fn_torch(), fn_ref()  # warm-up
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((fn_torch, fn_ref)):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--torch-threads", type=int, default=None,
                   help="torch intra-op threads (default: torch's own choice)")
    args = p.parse_args()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    if _unset:
        print(f"note: unset {', '.join(_unset)} for this process (they slow numpy's BLAS)")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"torch {torch.__version__} ({torch.get_num_threads()} threads), "
          f"refimpl on {refimpl.backend.cpu_namespace()}")
    t_torch, t_ref = best_of(lambda: chain(torch), lambda: chain(refimpl), args.repeat)
    print(f"per-op overhead, 1,000-op chain on 4 elements, fwd+bwd: torch {t_torch * 1e3:.2f} ms, "
          f"refimpl {t_ref * 1e3:.2f} ms, ratio {t_ref / t_torch:.2f}x (target <= 1.3)")
    m_torch, m_ref = best_of(mlp(torch), mlp(refimpl), args.repeat)
    print(f"throughput, 512-wide 3-layer tanh MLP, batch 512, fwd+bwd: torch {m_torch * 1e3:.1f} "
          f"ms, refimpl {m_ref * 1e3:.1f} ms, ratio {m_torch / m_ref:.2f}x (target >= 0.9)")


if __name__ == "__main__":
    main()
