"""A registry of named jobs."""


class Registry:
    def __init__(self):
        self._jobs = {}

    def register(self, name, func, tags=[]):
        """Register ``func`` under ``name``.

        The job's tags are the given tags (any iterable of str) without duplicates, in their
        first-seen order, followed by "all" (which is added once and always placed last).
        The caller's ``tags`` object is never modified. Registering an existing name raises
        ValueError.
        """
        tags.append("all")
        self._jobs[name] = {"func": func, "tags": tags}

    def tags(self, name):
        """A new list with the tags of job ``name`` (KeyError if unknown)."""
        return self._jobs[name]["tags"]

    def by_tag(self, tag):
        """Sorted list of the names of the jobs that have ``tag``."""
        return sorted(name for name, job in self._jobs.items() if tag in job["tags"])

    def run(self, name, *args, **kwargs):
        """Call job ``name`` with the given arguments (KeyError if unknown)."""
        return self._jobs[name]["func"](*args, **kwargs)


def job(registry, name, tags=()):
    """Decorator form of Registry.register; returns the function unchanged."""
    def decorate(func):
        registry.register(name, func, tags)
        return func
    return decorate
