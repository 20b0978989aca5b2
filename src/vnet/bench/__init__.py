"""Benchmarks: each drives vnet through its public interfaces, as a user would.

One package per benchmark (build, dataplane, forwarding, qos, netconf, snmp, mgmt, agent,
sdn), each a `Benchmark` (contract.py) listed in registry.py; the command line
(vnet.cli.bench_cmds) makes `vnet bench NAME` from it. Shared by all: the
statistics (stats.py), the results record (results.py), the report and plots
(report.py), progress and the common options (progress.py), option parsing
(options.py) and the one NETCONF client module (client.py). External programs
come from vnet.tools.
"""
