"""Admission control and path selection of the controller (issue 12, part 5).

Pure logic: no database, no network, no root. The database layer stores what
the ledger models; the API asks `admit` and `rearrange` for decisions.
"""
