"""See docs/ARCHITECTURE.md for what this layer holds."""
