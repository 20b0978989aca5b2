"""The one error every tool wrapper raises."""


class ToolError(RuntimeError):
    """An external tool failed, timed out, or printed something we cannot read."""
