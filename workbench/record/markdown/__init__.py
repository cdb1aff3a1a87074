"""report.md and its appendices, written from the collected record."""
