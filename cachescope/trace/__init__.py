"""The trace: the contract between parse and simulate (schema in DESIGN.md), and its readers."""
