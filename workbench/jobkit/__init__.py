"""What the core hands a job program: its config and its context (events out, folders, device)."""
