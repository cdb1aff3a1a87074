"""Plain models of what each screen shows, read from the session's one fold (workbench.fold.record); no textual here."""
