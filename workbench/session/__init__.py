"""Sessions on disk: the store of session and job folders, references between them, imports, prune, the frozen candidate."""
