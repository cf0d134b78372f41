"""Foundations every other folder builds on: errors, the tool registry, the context a tool sees,
the path jail, worker processes, the version.
"""
