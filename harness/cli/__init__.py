"""Thin command-line layer: one small module per subcommand over library functions."""
