"""Rehearsals: the registered study run end to end on a synthetic twin before any model is called."""
