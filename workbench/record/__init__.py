"""The session record: collect a session's folders, render report.md/json, metrics, figures, manifest, archive."""
