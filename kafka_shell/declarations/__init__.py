"""The declarations layer: what commands are made of (the registry, option types,
parsing, results and their rendering, progress)."""
