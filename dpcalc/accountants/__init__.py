"""Accountants behind one interface, one module per command that has them (see
``dpcalc.methods`` for the registries that name them)."""
