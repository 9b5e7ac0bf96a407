"""Graph freeing really frees (FREE-1): 1,000 training steps of
a small MLP keep memory flat, measured with tracemalloc (a generous bound, no timing)."""
import gc
import tracemalloc

import refimpl as torch


def test_training_steps_keep_memory_flat():
    torch.manual_seed(0)
    w1 = (torch.randn(8, 32) * 0.3).requires_grad_()
    w2 = (torch.randn(32, 1) * 0.3).requires_grad_()
    x, target = torch.randn(16, 8), torch.randn(16, 1)

    def step():
        loss = ((x @ w1).tanh() @ w2 - target).pow(2).mean()
        loss.backward()
        with torch.no_grad():
            for w in (w1, w2):
                w -= 0.01 * w.grad
                w.grad = None
        return loss.item()

    tracemalloc.start()
    try:
        for _ in range(100):  # warm-up: caches, first-use allocations
            step()
        gc.collect()
        early = tracemalloc.get_traced_memory()[0]
        for _ in range(1000):
            step()
        gc.collect()
        late = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # A leak of one saved activation per step would be >= 1000 * 16 * 32 * 4 bytes = 2 MB.
    assert late - early < 200_000, f"memory grew by {late - early} bytes over 1,000 steps"


def test_backward_releases_saved_arrays():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    fn = y.grad_fn
    y.sum().backward()
    assert fn.saved == "freed"
