"""Processes the server runs for agents: background commands, the project terminal, run
configurations, breakpoints, and which kernels are busy.
"""
