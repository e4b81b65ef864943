"""The face: the modes (REPL, one-shot, replay), the runner and what the user touches
(completion, the pager)."""
