"""INI-style configuration parser. See README.md for the format."""
from .errors import ConfigError
from .parser import load, loads

__all__ = ["ConfigError", "load", "loads"]
