"""Provenance: hashing, atomic writes, the frozen configuration and the registration timeline."""
