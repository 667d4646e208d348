"""Calendar helpers built on datetime.date."""
