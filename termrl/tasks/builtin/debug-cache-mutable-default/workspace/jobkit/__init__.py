"""jobkit: registered jobs, memoization and settings."""
