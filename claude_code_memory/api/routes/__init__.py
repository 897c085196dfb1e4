"""REST routes, one module per OpenMemory router."""
