"""Exploratory analyses of the paper (Appendix): moderators of the enrichment gain and their runner."""
