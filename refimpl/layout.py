"""Memory formats, as torch names them: what `clone(memory_format=...)` lays its copy out as.
Only the two refimpl uses: the operand's own layout (the default) and row-major memory, which
torch's AccumulateGrad asks for when a leaf's layout cannot be copied (DOUBLE-4, GRAD-2)."""
from __future__ import annotations


class memory_format:  # noqa: N801 - torch's spelling
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
