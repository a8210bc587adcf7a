"""The command-line interface: one small module per subcommand."""
