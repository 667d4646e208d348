"""Read-only, attribute-style settings."""
import copy


class Settings:
    """Attribute access to a dict of settings: ``Settings({"retries": 3}).retries == 3``.

    - Settings(values=None, **kw): the values are copied; keyword arguments override ``values``.
    - A missing setting raises AttributeError (so ``getattr(s, name, default)`` and
      ``hasattr`` work).
    - ``with_overrides(**kw)`` returns a new Settings with the given values replaced or added;
      the original is never changed.
    - ``as_dict()`` returns a new dict of all values.
    - Instances work with copy.copy, copy.deepcopy and pickle (which give equal settings).
    """

    def __init__(self, values=None, **kw):
        self._values = dict(values or {}, **kw)

    def __getattr__(self, name):
        return self._values[name]

    def with_overrides(self, **kw):
        new = copy.copy(self)
        new._values.update(kw)
        return new

    def as_dict(self):
        return dict(self._values)
