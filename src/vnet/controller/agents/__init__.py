"""The controller's side of the agents: transactions across hosts over NETCONF (vnet.client)."""
