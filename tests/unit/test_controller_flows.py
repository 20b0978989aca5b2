"""Which requested flows overlap a live connection's (the controller refuses them itself)."""

from vnet.controller.service.store import flows_overlap, steered_flows


def test_open_protocol_overlaps_any_protocol_between_the_same_ends() -> None:
    voice = steered_flows("pc1", "pc3", False, "udp", None, 5060)
    everything = steered_flows("pc1", "pc3", False, None, None, None)
    assert any(flows_overlap(m, t) for m in everything for t in voice)


def test_other_ports_other_direction_or_other_ends_do_not_overlap() -> None:
    voice = steered_flows("pc1", "pc3", False, "udp", None, 5060)
    assert not any(
        flows_overlap(m, t)
        for m in steered_flows("pc1", "pc3", False, "udp", None, 6000)
        for t in voice
    )
    assert not any(
        flows_overlap(m, t)
        for m in steered_flows("pc3", "pc1", False, "udp", None, 5060)
        for t in voice
    )
    assert not any(
        flows_overlap(m, t)
        for m in steered_flows("pc1", "pc2", False, None, None, None)
        for t in voice
    )


def test_a_two_way_connection_claims_the_reverse_flow_with_ports_swapped() -> None:
    both = steered_flows("pc1", "pc3", True, "tcp", 4000, 80)
    reverse = steered_flows("pc3", "pc1", False, "tcp", 80, 4000)
    assert any(flows_overlap(m, t) for m in reverse for t in both)
    assert not any(
        flows_overlap(m, t)
        for m in steered_flows("pc3", "pc1", False, "tcp", 4000, 80)
        for t in both
    )
