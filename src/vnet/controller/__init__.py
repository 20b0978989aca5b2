"""The network's manager (paper 001's Execution Management): one process that keeps the
state of the whole network in SQL and reaches agents only through `vnet.client`.

Today: the state (`db`: inventory, reservation ledger, request journal). The API,
admission and realisation across agents build on it.
"""
