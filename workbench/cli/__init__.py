"""The `ms-workbench` command line (cli.main is the entry point; the other modules are its subcommands)."""
