"""The config: schema and defaults, layers (defaults, file, --set), checked values, a YAML reader without aliases."""
