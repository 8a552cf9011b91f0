"""Parsing captures into traces (TCP reassembly, RESP)."""
