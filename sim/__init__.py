"""Deterministic simulation of the whole of dagq in one process (docs/simulation.md).

Not shipped with the Functions app (``.funcignore``). ``python -m sim`` runs seeds;
``sim.world.simulate(seed)`` runs one and returns its verdict and trace.
"""
