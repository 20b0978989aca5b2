"""Dynamic routing inside VRs: FRRouting configuration from the model, and its daemons."""
