"""Decoding FRR 8.4's `show ... json` answers shared by the agent's routing state and the
failover benchmark's convergence wait."""

from vnet.tools import frr


def test_a_neighbour_on_several_networks_is_a_list_and_on_one_a_single_entry():
    answer = {
        "neighbors": {
            "10.0.0.2": [
                {"nbrState": "Full/DR", "ifaceName": "a12:10.51.1.1"},
                {"nbrState": "2-Way/DROther", "ifaceName": "a13:10.51.3.1"},
            ],
            "10.0.0.3": {"nbrState": "Full/Backup", "ifaceName": "a13:10.51.3.1"},
        }
    }
    pairs = frr.ospf_neighbors(answer)
    assert [(rid, frr.neighbor_state(e)) for rid, e in pairs] == [
        ("10.0.0.2", "Full"),
        ("10.0.0.2", "2-Way"),
        ("10.0.0.3", "Full"),
    ]


def test_no_answer_or_no_neighbour_is_no_pair():
    assert frr.ospf_neighbors(None) == []
    assert frr.ospf_neighbors({"neighbors": {}}) == []


def test_an_ospfv3_neighbour_s_state_loses_its_role_too():
    assert frr.neighbor_state({"state": "Full/BDR"}) == "Full"
    assert frr.neighbor_state({}) == ""
