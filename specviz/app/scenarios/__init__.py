"""One frozen scenario per page (its inputs, hashable) and the cached functions that price it."""
