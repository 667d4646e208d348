class ConfigError(Exception):
    """Invalid configuration. ``line`` is the 1-based line number, or None."""

    def __init__(self, message, line=None):
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)
