"""The `resume` job: a run stopped and resumed from its checkpoint continues exactly as the uninterrupted one."""
