"""On an expanded target, an in-place op that refuses its arguments themselves (bool
subtraction or negation, integers to a negative power, a clamp_ bound the target's dtype
cannot hold) raises that, of no kind, before SELF_OVERLAPPING_WRITE; shapes that do not
broadcast, other ops' casts and a refused alpha come after it (INPLACE-18)."""
import pytest


@pytest.mark.clause("INPLACE-18")
def test_ops_that_check_their_arguments_before_the_memory_written(differential):
    def prog(torch, log):
        i = lambda: torch.tensor([1]).expand(2)          # noqa: E731
        b = lambda: torch.tensor([True]).expand(2)       # noqa: E731
        log.attempt("int expanded clamp_(0.5)", lambda: i().clamp_(0.5))
        log.attempt("int expanded clamp_(max=0.5)", lambda: i().clamp_(max=0.5))
        log.attempt("bool expanded sub_(1)", lambda: b().sub_(1))
        log.attempt("bool expanded neg_()", lambda: b().neg_())
        log.attempt("bool expanded relu_()", lambda: b().relu_())
        log.attempt("int expanded sub_(True)", lambda: i().sub_(True))
        log.attempt("int expanded pow_(-1)", lambda: i().pow_(-1))
        log.attempt("bool expanded pow_(-2)", lambda: b().pow_(-2))
        log.attempt("float expanded sub_(bool)", lambda: torch.tensor([1.0]).expand(2).sub_(
            torch.tensor([True, True])))
        # ... and what stays after the memory written: shapes, other ops' casts
        log.attempt("int expanded add_(0.5)", lambda: i().add_(0.5))
        log.attempt("int expanded clamp_(tensor 0.5)", lambda: i().clamp_(torch.tensor(0.5)))
        log.attempt("int expanded add_(3 elements)", lambda: i().add_(torch.tensor([1, 2, 3])))
        log.attempt("int expanded pow_(2)", lambda: i().pow_(2))
        log.attempt("int expanded add_(1, alpha=0.5)", lambda: i().add_(1, alpha=0.5))
        log.attempt("2-d expanded neg_ bool", lambda: torch.tensor([[True]]).expand(2, 2).neg_())
        # clamp_'s own check, on a target that is not expanded too
        log.attempt("int clamp_(0.5)", lambda: torch.tensor([1, 2]).clamp_(0.5))
        log.attempt("bool clamp_(0.5)", lambda: torch.tensor([True]).clamp_(0.5))
        log.attempt("int clamp_(max=2)", lambda: torch.tensor([1, 5]).clamp_(max=2))
    differential(prog)
