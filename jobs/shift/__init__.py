"""The `shift` job: the frozen candidate on new-distribution sets (built-in shifts of the test images, or the user's own)."""
