"""The base layer: what every layer uses (errors, files, paths, limits, deadlines, names);
the standard library only."""
