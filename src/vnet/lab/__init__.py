"""The lab: several emulated physical hosts on this machine, from one topology file,
with the processes (agents, probes) started inside them (see lab.py)."""
