"""The kernel layer: which kernel to start, connecting a client, executing code and following
its output. Run configurations run through it; the notebook and kernel tools build on it."""
