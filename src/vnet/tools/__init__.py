"""Wrappers around the external programs vnet runs (fping, iperf3, trafgen, Open vSwitch),
/proc readers, process start/stop by PID, and one bounded poll: each in one place.

Imports nothing of vnet above `model`, so every layer may use it.
"""
