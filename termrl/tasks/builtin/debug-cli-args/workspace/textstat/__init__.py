"""textstat: count lines, words and characters."""
