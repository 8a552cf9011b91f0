"""Simulation: policies over a trace's lookups, hit rates, timelines and plots."""
