"""vnet: multi-tenant network virtualization on Linux."""

__version__ = "0.1.0"
