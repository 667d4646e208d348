"""Running the jobs of a registry."""


def run_all(registry, tag, settings):
    """Run every job that has ``tag``, in name order, as ``func(settings)``.

    A job that raises is attempted again, up to ``1 + settings.retries`` attempts in total
    (``retries`` defaults to 0 when the setting is absent). Returns a dict mapping each job
    name to its result, or to ``"error: ExceptionClassName"`` if the last attempt failed.
    """
    retries = getattr(settings, "retries", 0)
    results = {}
    for name in registry.by_tag(tag):
        for _ in range(retries + 1):
            try:
                results[name] = registry.run(name, settings)
                break
            except Exception as exc:
                results[name] = f"error: {type(exc).__name__}"
    return results
