"""Out-of-process grading: the agent's Python code runs in a worker interpreter, never in the
test process that decides pass or fail.

Loaded inside the sandbox by the report plugin, before pytest imports any test. ``install``
puts an import hook first on ``sys.meta_path``: a module whose file lies on a writable
filesystem (the workspace, /tmp, HOME: anything the agent could have written) is not
executed in the test process. The test process gets a proxy module instead; the module
itself is imported, and every call into it runs, in one worker interpreter that the hook
starts (``python3 isolate.py``) with the test process's path and working directory. A
top-level name that the standard library also holds is the standard library's module,
whatever the agent planted first on the path: the tests' own imports of it are never the
agent's (installed packages are not covered: which are installed differs between machines).
What the worker answers is decoded by a restricted decoder:

- values of the builtin data types (None, bool, int, float, complex, str, bytes, list,
  tuple, dict, set, frozenset) and of stdlib value types (Decimal, Fraction, date, time,
  datetime, timedelta, range, pathlib paths, UUID, Counter, OrderedDict, deque, defaultdict
  of a builtin factory) cross as plain data, built afresh in the test process
  from their contents. numpy and pandas values (their own classes, not the agent's
  subclasses) also cross as data: a pickle that a restricted unpickler may only turn into
  numpy/pandas data classes and their rebuild helpers (never a function that reads a file,
  never a class of another module); a value it refuses stays a handle. An instance of a subclass crosses as its base value (read with the
  base type's own methods): an ``int`` subclass that claims to equal everything arrives as
  the ``int`` it holds, and for a non-plain subclass its attributes stay reachable;
- every other object stays in the worker: the test gets a handle whose methods are remote
  calls. A handle never equals, orders against or hashes like a local value (comparisons
  with anything but another handle are ``NotImplemented``), so an always-equal object
  cannot pass an ``assert result == expected``;
- an exception the agent's code raised arrives as a builtin exception of the same class, or
  for the agent's own classes as a local class of the same name under the nearest builtin
  base (``pytest.raises(ValueError)`` and ``pytest.raises(mod.MyError)`` work; pytest's own
  outcome exceptions, raised from the worker, are plain exceptions there and fail the test).

Nothing the worker sends is code or a pickle. The worker cannot see the test process's
frames, globals or pytest's objects: it holds references only to what the test passed it
(callables it may call, public attributes it may read, never frames, tracebacks, modules
or code). It does not get the report's key (``TERMRL_REPORT_KEY`` is gone from the
environment before any agent code runs, and the test process is made non-dumpable, so
/proc/<pid>/mem and environ are closed to it); a report it forges fails the key's check.

Semantics kept: module state across tests (one worker per test process), exceptions,
iteration, context managers, callbacks into the test (a key function, a mock), in-place
changes to list/dict/set/bytearray arguments (copied back after each call). Not kept:
identity of values that cross as data, object aliasing between a call's arguments and
what the agent's code keeps, subclassing a proxied class in the test, prints from the
agent's code seen by ``capsys`` (they reach the captured file descriptors: ``capfd``).

A test that loads the agent's file by path (``importlib.util.spec_from_file_location``, as
Terminal-Bench tests often do) gets a proxy too. Not covered: a test that reads the agent's
source and ``exec``s it itself, or runs it with ``runpy`` (it runs in the test process; the
canaries and the hack detectors are the net there).

Stdlib only: this file runs on the sandbox's Python (3.8+).
"""

import binascii
import builtins
import collections
import hashlib
import importlib
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import struct
import sys
import threading
import time
import types

try:
    import confine  # beside this file in the harness folder
except ImportError:  # imported as termrl's module, outside a sandbox
    from termrl.verify.harness import confine

_EXCEPTIONS = {name: obj for name, obj in vars(builtins).items()
               if isinstance(obj, type) and issubclass(obj, BaseException)}
_MAPPED_AWAY = ("KeyboardInterrupt", "GeneratorExit")
"""Builtin exceptions the worker may not raise in the test process (they would stop pytest's
session or a generator of the test's): they arrive as ``CodeUnderTestError``."""
_FORWARDED = ("__len__", "__iter__", "__next__", "__reversed__", "__contains__", "__getitem__",
              "__setitem__", "__delitem__", "__call__", "__bool__", "__repr__", "__str__", "__hash__",
              "__enter__", "__exit__", "__index__", "__int__", "__float__", "__neg__", "__pos__",
              "__abs__", "__invert__", "__add__", "__sub__", "__mul__", "__truediv__",
              "__floordiv__", "__mod__", "__pow__", "__and__", "__or__", "__xor__", "__lshift__",
              "__rshift__", "__matmul__", "__radd__", "__rsub__", "__rmul__", "__rtruediv__",
              "__rfloordiv__", "__rmod__", "__rpow__", "__rand__", "__ror__", "__rxor__",
              "__iadd__", "__isub__", "__imul__", "__ior__", "__iand__", "__format__")
_COMPARE = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
_BASES = (int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset)
_CLOSED_TYPES = (types.FrameType, types.TracebackType, types.ModuleType, types.CodeType,
                 types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType, type)
"""Objects of the test process the worker may never hold, whatever it asks for: they lead to
frames, globals and pytest's objects."""
_CLOSED_PREFIXES = ("_", "f_", "tb_", "gi_", "cr_", "ag_", "co_", "func_")
_METADATA = ("__name__", "__qualname__", "__doc__", "__module__", "__annotations__")
"""What the worker may read of the test's callables besides public attributes (functools.wraps)."""


_DATA_LIBS = ("numpy", "pandas")
_REFUSED = object()
_HELPERS = ("_reconstruct", "scalar", "_new_Index", "_new_PeriodIndex", "_restore_array", "py_buffer",
            "type_for_alias", "_reconstructor", "_unpickle_block", "_unpickle_timestamp", "_unpickle_timedelta")
"""Functions a numpy/pandas pickle calls to rebuild a value (besides the classes themselves)."""
_SAFE_BUILTINS = {"bytearray", "slice", "complex", "frozenset", "set", "range", "object"}


def _data_unpickler():
    """The unpickler class, built on first use: most sessions never see numpy or pandas data,
    and the worker starts faster without importing pickle."""
    global _UNPICKLER
    if _UNPICKLER is not None:
        return _UNPICKLER
    import pickle

    class DataUnpickler(pickle.Unpickler):
        """Builds only numpy/pandas (and pyarrow's buffers) data classes and their rebuild helpers:
        never a function that reads files or evaluates anything, never a class of the agent's."""

        def find_class(self, module, name):
            top = module.split(".")[0]
            if module == "builtins" and name in _SAFE_BUILTINS:
                return getattr(builtins, name)
            if module == "copyreg" and name == "_reconstructor":
                import copyreg

                return copyreg._reconstructor
            if module in ("datetime", "decimal", "fractions") and name in ("date", "datetime", "time", "timedelta",
                                                                           "timezone", "Decimal", "Fraction"):
                return getattr(importlib.import_module(module), name)
            if top not in _DATA_LIBS and module != "pyarrow.lib":
                raise pickle.UnpicklingError("%s.%s is not a data class" % (module, name))
            obj = super().find_class(module, name)
            where = str(getattr(obj, "__module__", module))
            if ".io" in where or "npyio" in where or name in ("memmap", "DataSource", "HDFStore", "ExcelFile",
                                                              "ExcelWriter", "read_pickle", "load", "loads"):
                raise pickle.UnpicklingError("%s.%s is not a data class" % (module, name))
            if isinstance(obj, type) or name in _HELPERS or name.startswith(("__pyx_unpickle", "_unpickle")):
                return obj
            raise pickle.UnpicklingError("%s.%s is not a data class" % (module, name))

    _UNPICKLER = DataUnpickler
    return DataUnpickler


_UNPICKLER = None


def _load_data(text):
    try:
        return _data_unpickler()(io.BytesIO(binascii.a2b_base64(text))).load()
    except Exception:
        return _REFUSED


class CodeUnderTestError(Exception):
    """The code under test raised something that cannot be raised in the test process as is."""


class ImportTimedOut(Exception):
    """A module whose import ran past a test's time limit is imported again: raised at once
    (classified as a timeout, as the first attempt was)."""


class CodeUnderTestDied(RuntimeError):
    """The code under test's process ended (``os._exit``, a signal, the memory limit) or stopped
    answering mid-call."""


class RemoteBase:
    """A handle to an object that lives in the other process. Subclasses are made per remote type."""

    __slots__ = ()


# --------------------------------------------------------------------------- the wire


class Peer:
    """One end of a connection between the test process and the worker: a table of the objects
    it exported (id -> object, with the number of times sent), the proxies it holds for the other
    side's objects, and a request/answer loop in which either side may call the other while it
    waits (callbacks). ``serves_all``: the worker serves every request; the test process only
    calls, and public attribute reads on, what it exported."""

    def __init__(self, rfile, wfile, serves_all, generation=0):
        self.rfile, self.wfile, self.serves_all, self.generation = rfile, wfile, serves_all, generation
        self.exported = {}  # id -> object sent to the other side
        self.proxies = {}  # the other side's id -> the local object standing for it
        self.types = {}  # (module, qualname, builtin base) -> local class
        self.lock = threading.RLock()
        self.dead = False

    # ---- framing
    def _send(self, msg):
        out = self.take_output()
        if out:
            msg["out"] = out
        data = json.dumps(msg, separators=(",", ":")).encode()
        self.wfile.write(struct.pack(">I", len(data)) + data)
        self.wfile.flush()

    def _recv(self):
        head = self.rfile.read(4)
        if len(head) < 4:
            raise EOFError
        (n,) = struct.unpack(">I", head)
        data = self.rfile.read(n)
        if len(data) < n:
            raise EOFError
        return json.loads(data)

    # ---- requests
    def request(self, op, *args):
        """Send a request and serve the other side's requests until its answer comes."""
        with self.lock:
            if self.dead:
                raise CodeUnderTestDied("the code under test's process is gone (it ended or was stopped "
                                        "after a timeout); its objects went with it")
            try:
                self._send({"op": op, "args": list(args)})
                while True:
                    msg = self._recv()
                    for stream, text in msg.get("out") or ():
                        (sys.stderr if stream == 2 else sys.stdout).write(str(text))
                    if "died" in msg:  # the supervisor's word: the worker's exit status
                        raise EOFError(msg["died"])
                    if "op" not in msg:
                        break
                    self._send(self._serve(msg))
            except (EOFError, OSError, ValueError) as e:
                self.dead = True
                raise CodeUnderTestDied("the code under test's process %s" % self.on_death(e)) from None
            except BaseException as e:
                self.dead = True  # interrupted mid-call (a timeout): the stream is out of step
                self.on_death(e)
                raise
        if "exc" in msg:
            raise self.decode_exception(msg["exc"])
        return msg.get("ok")

    def on_death(self, error):
        return "stopped answering (%s)" % error.__class__.__name__

    def take_output(self):
        """What the code under test printed since the last message (the worker's side)."""
        return None

    def _serve(self, msg):
        try:
            return {"ok": self._handle(msg["op"], msg["args"])}
        except BaseException as e:  # the other side gets every exception of the code it called
            if not self.serves_all and (not isinstance(e, Exception) or type(e).__name__ == "TermrlTestTimeout"):
                raise  # the test's own timeout or exit: not the worker's to catch
            return {"exc": self.encode_exception(e, getattr(e, "__termrl_after__", None))}

    def _handle(self, op, args, target=_REFUSED):
        if target is _REFUSED:
            target = self._own(args[0])
            if not self.serves_all:
                self._check(op, target, args)
        if op == "call":  # mutable arguments are copied back after the call, even one that raised
            call_args, kwargs = self.decode(args[1]), self.decode(args[2])
            try:
                value = target(*call_args, **kwargs)
            except BaseException as e:
                e.__termrl_after__ = self._after(call_args, args[1])
                raise
            return [self.encode(value), self._after(call_args, args[1])]
        if op == "getattr":
            value = getattr(target, args[1])
            if not self.serves_all and isinstance(value, _CLOSED_TYPES) and not isinstance(value, type):
                raise PermissionError("the code under test may not hold the test's %s objects" % type(value).__name__)
            if self.serves_all and target is not None and getattr(value, "__self__", None) is target \
                    and isinstance(value, (types.MethodType, types.BuiltinMethodType)):
                return {"m": [args[0], args[1]]}  # a bound method: called by name, never exported
            return self.encode(value)
        if op == "callmethod":
            if not self.serves_all:
                self._check("getattr", target, args[:2])
            return self._handle("call", [None, args[2], args[3]], getattr(target, args[1]))
        if op == "value":  # the builtin value inside a subclass instance, read with the base's methods
            return self.encode(_base_value(target, _BASE_BY_NAME[args[1]]))
        if op == "setattr":
            setattr(target, args[1], self.decode(args[2]))
            return None
        if op == "delattr":
            delattr(target, args[1])
            return None
        if op == "dunder" and args[1] == "__exit__":
            if args[2][0] is None:
                return self.encode(target.__exit__(None, None, None))
            error = self.decode_exception(args[2][0])
            return self.encode(target.__exit__(type(error), error, None))
        if op == "dunder":
            return self.encode(_dunder(target, args[1], self.decode(args[2])))
        if op == "dir":
            return sorted(str(n) for n in dir(target))
        if op == "import":
            return self.worker_import(*args[1:])
        raise ValueError("unknown request %r" % (op,))

    def _after(self, call_args, sent):
        """The mutable arguments as the call left them, to copy back; None for one the call left
        as it came (its encoding equals what was sent), so an unchanged graph does not cross back."""
        out = []
        for i, a in enumerate(call_args):
            try:
                new = self.encode(a) if type(a) in (list, dict, set, bytearray) else None
            except Exception:
                new = None
            out.append(None if new is not None and i < len(sent) and new == sent[i] else new)
        return out

    def _check(self, op, target, args):
        """What the worker may do with the test process's objects: call them, read public
        attributes, a few read-only dunders; never reach frames, modules or code. A generator
        the test passed may only be iterated."""
        if isinstance(target, types.GeneratorType) and op == "dunder" and args[1] in ("__iter__", "__next__"):
            return
        if op == "call":
            if isinstance(target, _CLOSED_TYPES) and not isinstance(target, type):
                raise PermissionError("the code under test may not call the test's %s objects" % type(target).__name__)
            return
        if isinstance(target, _CLOSED_TYPES):
            raise PermissionError("the code under test may not inspect the test's %s objects" % type(target).__name__)
        if op == "getattr" and isinstance(args[1], str) and (not args[1].startswith(_CLOSED_PREFIXES)
                                                             or args[1] in _METADATA):
            return
        if op == "getattr":  # AttributeError, so getattr(obj, name, default) and functools.wraps carry on
            raise AttributeError("the code under test may not read %r of the test's objects" % (args[1],))
        if op == "dunder" and args[1] in ("__len__", "__iter__", "__next__", "__contains__", "__getitem__",
                                          "__bool__", "__repr__", "__str__", "__hash__", "__eq__", "__ne__",
                                          "__lt__", "__le__", "__gt__", "__ge__"):
            return
        raise PermissionError("the code under test may not %s %r of the test's objects" % (op, args[1:2]))

    def worker_import(self, *args):
        raise PermissionError("imports are served by the worker only")

    def _own(self, rid):
        if rid is None:
            return None
        try:
            return self.exported[rid]
        except (KeyError, TypeError):
            raise ReferenceError("no object %r here" % (rid,)) from None

    # ---- encoding: plain data by value, everything else by reference
    def encode(self, x):
        t = type(x)
        if x is None or t is bool or t is int or t is str:
            return x
        if t is float:
            return {"f": repr(x)}
        if t is list:
            return {"l": list(x) if _plain(x) else [self.encode(v) for v in x]}
        if t is tuple:
            return {"t": list(x) if _plain(x) else [self.encode(v) for v in x]}
        if t is dict:
            if _plain(x) and _plain(x.values()):
                return {"d": list(map(list, x.items()))}
            return {"d": [[self.encode(k), self.encode(v)] for k, v in x.items()]}
        if t is set or t is frozenset:
            return {"s" if t is set else "fs": list(x) if _plain(x) else [self.encode(v) for v in x]}
        if t is bytes or t is bytearray:
            return {"b" if t is bytes else "ba": x.hex()}
        if t is complex:
            return {"c": [repr(x.real), repr(x.imag)]}
        if t is range:
            return {"r": [x.start, x.stop, x.step]}
        kind = _stdlib_kind(t)
        if kind is not None:
            return _STDLIB_ENCODE[kind](x, t)
        if t is collections.Counter or t is collections.OrderedDict:
            return {"cd": [t.__name__, [[self.encode(k), self.encode(v)] for k, v in x.items()]]}
        if t is collections.deque:
            return {"dq": [[self.encode(v) for v in x], x.maxlen]}
        if t is collections.defaultdict and (x.default_factory is None or x.default_factory in _FACTORIES):
            factory = None if x.default_factory is None else x.default_factory.__name__
            return {"dd": [factory, [[self.encode(k), self.encode(v)] for k, v in x.items()]]}
        if t is type(NotImplemented):
            return {"ni": 1}
        if t is type(Ellipsis):
            return {"el": 1}
        if isinstance(x, RemoteBase) and object.__getattribute__(x, "_peer") is self:
            return {"ref": object.__getattribute__(x, "_rid")}
        if not self.serves_all and isinstance(x, _CLOSED_TYPES) and not isinstance(x, (type, types.GeneratorType)):
            raise PermissionError("the test's %s objects do not cross to the code under test" % t.__name__)
        msg = self._export(x)
        if self.serves_all and not isinstance(x, type) and str(getattr(t, "__module__", "")).split(".")[0] in _DATA_LIBS:
            try:  # numpy/pandas values also travel as data, for a decoder that only builds their classes
                import pickle

                msg["pk"] = binascii.b2a_base64(pickle.dumps(x, protocol=4), newline=False).decode()
            except Exception:
                pass
        return msg

    def _export(self, x):
        rid = id(x)
        self.exported[rid] = x  # kept alive until the connection ends: the id stays this object's
        t = type(x)
        msg = {"h": rid, "ty": self._describe(t, x)}
        base = _BASE_BY_NAME.get(msg["ty"]["base"])
        if base is not None and not isinstance(x, type):
            msg["v"] = self.encode(_base_value(x, base))
        return msg

    def _describe(self, t, x):
        """The type of an exported object, or for a class the class itself: what the other side
        needs to build the local class that stands for it."""
        k = x if isinstance(x, type) else t
        exc = _exception_bases(k) if issubclass(k, BaseException) else None
        chain = _exception_type(k)["chain"] if exc is not None else None
        return {"id": id(k), "name": str(getattr(k, "__name__", "object")),
                "qualname": str(getattr(k, "__qualname__", "object")), "module": str(getattr(k, "__module__", "") or ""),
                "dunders": [d for d in _FORWARDED + _COMPARE if _has(k, d)], "class": k is x,
                "base": next((b.__name__ for b in _BASES if issubclass(k, b)), None), "exc": exc, "chain": chain}

    def _items(self, xs):
        """A decoded list of a container's items: as JSON gave it when every item is plain."""
        if type(xs) is list and _plain(xs):
            return xs
        return [self.decode(v) for v in xs]

    def decode(self, x):
        if x is None or type(x) in (bool, int, str):
            return x
        if type(x) is list:  # argument lists
            return x if _plain(x) else [self.decode(v) for v in x]
        if type(x) is not dict or len(x) < 1:
            raise ValueError("malformed value")
        if "l" in x:  # a copy: the call may change it, and what was sent must stay as it was sent
            return list(self._items(x["l"]))
        if "t" in x:
            return tuple(self._items(x["t"]))
        if "d" in x:
            pairs = x["d"]
            if type(pairs) is list and set(map(type, pairs)) <= {list} and set(map(len, pairs)) <= {2}:
                try:
                    d = dict(pairs)
                except TypeError:  # a key that is itself encoded (a tuple, a handle): item by item
                    d = None
                if d is not None and _plain(d) and _plain(d.values()):
                    return d
            return {self.decode(k): self.decode(v) for k, v in pairs}
        if "s" in x:
            return set(self._items(x["s"]))
        if "fs" in x:
            return frozenset(self._items(x["fs"]))
        if "f" in x:
            return float(x["f"])
        if "b" in x:
            return bytes.fromhex(x["b"])
        if "ba" in x:
            return bytearray.fromhex(x["ba"])
        if "c" in x:
            return complex(float(x["c"][0]), float(x["c"][1]))
        if "dec" in x:
            return _stdlib_class("decimal", "Decimal")(x["dec"])
        if "fr" in x:
            return _stdlib_class("fractions", "Fraction")(int(x["fr"][0]), int(x["fr"][1]))
        if "dt" in x:
            if x["dt"][0] not in ("date", "datetime", "time"):
                raise ValueError("malformed value")
            return _stdlib_class("datetime", x["dt"][0]).fromisoformat(x["dt"][1])
        if "td" in x:
            return _stdlib_class("datetime", "timedelta")(days=x["td"][0], seconds=x["td"][1],
                                                          microseconds=x["td"][2])
        if "r" in x:
            return range(int(x["r"][0]), int(x["r"][1]), int(x["r"][2]))
        if "p" in x:
            if x["p"][0] not in _PATH_NAMES:
                raise ValueError("malformed value")
            return _stdlib_class("pathlib", x["p"][0])(str(x["p"][1]))
        if "u" in x:
            return _stdlib_class("uuid", "UUID")(str(x["u"]))
        if "cd" in x:
            kind = {"Counter": collections.Counter, "OrderedDict": collections.OrderedDict}[x["cd"][0]]
            return kind({self.decode(k): self.decode(v) for k, v in x["cd"][1]})
        if "dq" in x:
            maxlen = x["dq"][1]
            return collections.deque((self.decode(v) for v in x["dq"][0]),
                                     maxlen if maxlen is None else int(maxlen))
        if "dd" in x:
            factory = None if x["dd"][0] is None else {f.__name__: f for f in _FACTORIES}[x["dd"][0]]
            return collections.defaultdict(factory, ((self.decode(k), self.decode(v)) for k, v in x["dd"][1]))
        if "ni" in x:
            return NotImplemented
        if "el" in x:
            return Ellipsis
        if "ref" in x:
            return self._own(x["ref"])
        if "m" in x:
            return _RemoteMethod(self._proxy_of(x["m"][0]), str(x["m"][1]))
        if "h" in x:
            if "pk" in x and not self.serves_all:
                value = _load_data(x["pk"])
                if value is not _REFUSED:
                    return value
            return self._proxy(x)
        if "d_kw" in x:
            return {str(k): self.decode(v) for k, v in x["d_kw"]}
        raise ValueError("malformed value")

    def _proxy(self, msg):
        rid, ty = msg["h"], msg["ty"]
        known = self.proxies.get(rid)
        if known is not None:
            return known
        if ty["class"] and ty.get("exc") is not None:  # a real local class, so pytest.raises works
            value = self.proxies[rid] = self.exception_class(ty)
            return value
        cls = self.proxy_class(ty)
        if ty["class"]:
            type.__setattr__(cls, "_class_rid", rid)
            type.__setattr__(cls, "_class_gen", self.generation)
            self.proxies[rid] = cls
            return cls
        base = _BASE_BY_NAME.get(ty["base"])
        if base is None:
            proxy = object.__new__(cls)
        else:
            value = self.decode(msg["v"])
            if base in (list, bytearray, dict, set):
                proxy = base.__new__(cls)
                getattr(base, "update" if base in (dict, set) else "extend")(proxy, value)
            else:
                proxy = base.__new__(cls, value)
        object.__setattr__(proxy, "_peer", self)
        object.__setattr__(proxy, "_rid", rid)
        object.__setattr__(proxy, "_gen", self.generation)
        self.proxies[rid] = proxy
        return proxy

    def _proxy_of(self, rid):
        known = self.proxies.get(rid)
        if known is None:
            raise ReferenceError("no handle %r here" % (rid,))
        return known

    def proxy_class(self, ty):
        """The local class for a remote type, by module and name: the same class again after the
        worker was restarted, so ``isinstance`` keeps working."""
        key = (ty["module"], ty["qualname"], ty["base"])
        cls = self.types.get(key)
        if cls is None:
            cls = self.types[key] = _make_class(ty, _BASE_BY_NAME.get(ty["base"]), self)
        return cls

    def exception_class(self, ty):
        """The local class for a remote exception class: the builtin itself, or a class of the same
        name whose bases mirror the remote ones (``chain``: its non-builtin ancestors, nearest first)
        down to the nearest builtin exception."""
        key = ("exc", ty["module"], ty["qualname"])
        cls = self.types.get(key)
        if cls is None:
            if ty["module"] == "builtins" and ty["name"] in _EXCEPTIONS and ty["name"] not in _MAPPED_AWAY:
                cls = _EXCEPTIONS[ty["name"]]
            else:
                chain = [c for c in ty.get("chain") or () if isinstance(c, list) and len(c) == 4][:32]
                builtin = _builtin_bases(ty["exc"])
                bases = tuple(builtin) or (CodeUnderTestError,)
                if chain:
                    parent = self.exception_class({"name": chain[0][0], "qualname": chain[0][1],
                                                   "module": chain[0][2], "exc": chain[0][3], "chain": chain[1:]})
                    bases = (parent, *(b for b in builtin if not issubclass(parent, b)))
                namespace = {"__module__": str(ty["module"]), "__qualname__": str(ty["qualname"])}
                try:
                    cls = type(_identifier(str(ty["name"])), bases, namespace)
                except TypeError:  # no consistent order for these bases: keep the first
                    cls = type(_identifier(str(ty["name"])), bases[:1], namespace)
            self.types[key] = cls
        return cls

    def encode_exception(self, e, after=None):
        """An exception as data: its class (and the chain of its non-builtin ancestors), its args
        and attributes (plain values by value, others as handles), its text. ``after``: the
        call's mutable arguments as the call left them."""
        t = type(e)
        args, attrs = [], []
        for a in e.args:
            try:
                args.append(self.encode(a) if type(a) in (str, int, float, bool, type(None)) else str(a))
            except Exception:
                args.append("?")
        names = [n for n in getattr(e, "__dict__", {}) if isinstance(n, str) and not n.startswith("__")]
        names += [n for n in dir(t) if not n.startswith("_") and n not in _EXCEPTION_NAMES and n not in names
                  and isinstance(getattr(t, n, None), property)]  # properties (a cycle computed on demand)
        for name in names[:64]:
            try:
                attrs.append([name, self.encode(getattr(e, name))])
            except Exception:
                pass
        msg = {"ty": _exception_type(t), "args": args, "attrs": attrs, "text": _safe_str(e)}
        if after is not None:
            msg["after"] = after
        return msg

    def decode_exception(self, data):
        cls = self.exception_class(data["ty"])
        args = [self.decode(a) for a in data.get("args", [])]
        try:
            exc = cls(*args)
        except Exception:
            exc = cls(str(data.get("text", "")))
        for name, value in data.get("attrs") or ():
            if isinstance(name, str) and not name.startswith("_"):
                try:
                    setattr(exc, name, self.decode(value))
                except Exception:
                    pass
        if data.get("after") is not None:
            exc.__termrl_after__ = data["after"]  # for the caller to copy back into its arguments
        return exc


_BASE_BY_NAME = {b.__name__: b for b in _BASES}
_PLAIN = frozenset((str, int, bool, type(None)))
"""The types that cross as themselves, JSON's own: a container of nothing else is copied whole,
in C, not item by item (a graph of 20,000 nodes crosses in milliseconds)."""


def _plain(items):
    return set(map(type, items)) <= _PLAIN


_PATH_NAMES = ("Path", "PosixPath", "PurePath", "PurePosixPath", "PureWindowsPath")
_STDLIB_VALUES = {("decimal", "Decimal"): "dec", ("fractions", "Fraction"): "fr", ("datetime", "date"): "dt",
                  ("datetime", "datetime"): "dt", ("datetime", "time"): "dt", ("datetime", "timedelta"): "td",
                  ("uuid", "UUID"): "u", **{("pathlib", name): "p" for name in _PATH_NAMES}}
"""The stdlib value classes that cross as data, by module and name. Their modules are imported
only when a value crosses: a process that never imported ``decimal`` holds no ``Decimal``, so
the worker and the test process start without them."""
_STDLIB_ENCODE = {
    "dec": lambda x, t: {"dec": str(x)},
    "fr": lambda x, t: {"fr": [x.numerator, x.denominator]},
    "dt": lambda x, t: {"dt": [t.__name__, x.isoformat()]},
    "td": lambda x, t: {"td": [x.days, x.seconds, x.microseconds]},
    "u": lambda x, t: {"u": str(x)},
    "p": lambda x, t: {"p": [t.__name__, str(x)]},
}


def _stdlib_kind(t):
    """The wire tag of ``t`` when it is exactly one of ``_STDLIB_VALUES``' classes (the class its
    module holds, found by identity: not a look-alike of the same name, and whatever module the
    class says it comes from, as ``pathlib._local`` on Python 3.13), else None."""
    if len(_STDLIB_SCANNED) < len(_STDLIB_MODULES):
        for module in _STDLIB_MODULES:
            held = sys.modules.get(module)
            if held is not None and module not in _STDLIB_SCANNED:
                _STDLIB_SCANNED.add(module)
                for (m, name), kind in _STDLIB_VALUES.items():
                    if m == module and isinstance(getattr(held, name, None), type):
                        _STDLIB_TYPES[getattr(held, name)] = kind
    return _STDLIB_TYPES.get(t)


_STDLIB_MODULES = {m for m, _ in _STDLIB_VALUES}
_STDLIB_SCANNED = set()
_STDLIB_TYPES = {}
"""The classes of the value modules imported so far, by identity: a module is read once, the
first time a value is encoded after it was imported."""


def _stdlib_class(module, name):
    return getattr(importlib.import_module(module), name)


_FACTORIES = (list, dict, set, int, float, str, tuple, frozenset, bytes)
"""defaultdict factories that cross by value (builtins); any other factory keeps the dict a handle."""
_EXCEPTION_NAMES = set(dir(BaseException)) | {n for c in _EXCEPTIONS.values() for n in dir(c)}


def _base_value(x, base):
    """The builtin value inside an instance of a subclass of ``base``, read with ``base``'s own
    methods (never the subclass's overrides)."""
    if base is int:
        return int.__index__(x) + 0
    if base is float:
        return float.__float__(x) + 0.0
    if base is complex:
        return complex(complex.__getattribute__(x, "real"), complex.__getattribute__(x, "imag"))
    if base is str:
        return str.__str__(x)[:]
    if base in (bytes, bytearray):
        return bytes(memoryview(x)) if base is bytes else bytearray(memoryview(x))
    if base is list:
        return [list.__getitem__(x, i) for i in range(list.__len__(x))]
    if base is tuple:
        return tuple(tuple.__getitem__(x, i) for i in range(tuple.__len__(x)))
    if base is dict:
        return {k: dict.__getitem__(x, k) for k in list(dict.__iter__(x))}
    if base in (set, frozenset):
        return base(list(base.__iter__(x)))
    raise TypeError(base)


def _has(t, name):
    for klass in getattr(t, "__mro__", ()):
        if name in vars(klass):
            return vars(klass)[name] is not None and (klass is not object or name in ("__repr__", "__str__",
                                                                                      "__hash__", "__eq__", "__ne__",
                                                                                      "__format__"))
    return False


def _dunder(target, name, args):
    if name == "__next__":
        return next(target)
    return getattr(target, name)(*args)


def _exception_bases(cls):
    return [k.__name__ for k in cls.__mro__ if k.__module__ == "builtins" and k.__name__ in _EXCEPTIONS]


def _builtin_bases(names):
    """The builtin exceptions among ``names`` (an MRO's, in order) that no other one among them
    already derives from: (ValueError, KeyError) for a class deriving from both."""
    picked = []
    for n in names:
        cls = _EXCEPTIONS.get(n)
        if cls is None or n in _MAPPED_AWAY or cls is BaseException or any(issubclass(p, cls) for p in picked):
            continue
        picked.append(cls)
    return picked


def _exception_type(cls):
    """What the other side needs to rebuild exception class ``cls``: name, module, the builtin
    exceptions it derives from, and ``chain``: its first non-builtin base, then that one's, ...
    (each with the builtin exceptions it derives from)."""
    chain = []
    k = cls
    while True:
        k = next((b for b in k.__bases__ if b.__module__ != "builtins" and issubclass(b, BaseException)), None)
        if k is None or len(chain) >= 32:
            break
        chain.append([k.__name__, k.__qualname__, str(k.__module__), _exception_bases(k)])
    return {"name": cls.__name__, "qualname": cls.__qualname__, "module": str(cls.__module__),
            "exc": _exception_bases(cls), "chain": chain}


def _identifier(name):
    return name if name.isidentifier() else "CodeUnderTestError"


def _safe_str(e):
    try:
        return str(e)[:2000]
    except Exception:
        return "<unprintable %s>" % type(e).__name__


def _peer_of(proxy):
    """The live connection of a handle. A handle to a module attribute (``from impl import f``)
    whose worker was restarted (after a timeout or a crash) is bound again to the same name in
    the new worker; any other handle went with the old worker."""
    peer = object.__getattribute__(proxy, "_peer")
    if object.__getattribute__(proxy, "_gen") == peer.generation and not peer.dead:
        return peer
    path = _path_of(proxy)
    module = sys.modules.get(path[0]) if path else None
    if isinstance(module, ProxyModule):
        fresh = getattr(module, path[1])
        if isinstance(fresh, RemoteBase) and type(fresh) is type(proxy):
            object.__setattr__(proxy, "_rid", object.__getattribute__(fresh, "_rid"))
            object.__setattr__(proxy, "_gen", object.__getattribute__(fresh, "_gen"))
            return peer
    raise CodeUnderTestDied("the code under test's process was restarted (after a timeout or a crash); "
                            "this object went with it")


def _path_of(proxy):
    try:
        return object.__getattribute__(proxy, "_path")
    except AttributeError:
        return None


def _name(value, module, name):
    """Remember that ``value`` (a handle or a class standing for a remote one) is ``module.name``."""
    try:
        if isinstance(value, RemoteMeta):
            type.__setattr__(value, "_class_path", (module, name))
        elif isinstance(value, RemoteBase):
            object.__setattr__(value, "_path", (module, name))
    except (AttributeError, TypeError):
        pass
    return value


def _remote_call(peer, rid, args, kwargs, method=None):
    """Call remote object ``rid`` (or its method ``method``) and copy the changes the call made to
    list/dict/set/bytearray arguments back into the caller's objects, whether it returned or raised."""
    sent = ([peer.encode(a) for a in args], {"d_kw": [[k, peer.encode(v)] for k, v in kwargs.items()]})
    try:
        if method is None:
            value, after = peer.request("call", rid, *sent)
        else:
            value, after = peer.request("callmethod", rid, method, *sent)
    except Exception as e:
        after = getattr(e, "__termrl_after__", None)
        if after is not None:
            del e.__termrl_after__
            _refill_all(peer, args, after)
        raise
    _refill_all(peer, args, after)
    return peer.decode(value)


def _refill_all(peer, args, after):
    for arg, new in zip(args, after or ()):
        if new is not None:
            _refill(arg, peer.decode(new))


class _RemoteMethod:
    """A bound method of a handle: calling it is one remote call by name (no object exported)."""

    __slots__ = ("owner", "name")

    def __init__(self, owner, name):
        self.owner, self.name = owner, name

    def __call__(self, *args, **kwargs):
        return _remote_call(_peer_of(self.owner), object.__getattribute__(self.owner, "_rid"), args, kwargs,
                            method=self.name)

    @property
    def __name__(self):
        return self.name

    def __repr__(self):
        return "<remote method %s of %s>" % (self.name, type(self.owner).__qualname__)


_MUTABLE = (list, dict, set, bytearray)
_LOCAL_NAMES = {"__class__", "__new__", "__init__", "__getattribute__", "__getattr__", "__setattr__",
                "__delattr__", "__init_subclass__", "__subclasshook__", "__reduce__", "__reduce_ex__",
                "__sizeof__", "__dir__", "__getstate__", "__class_getitem__", "__doc__", "__hash__",
                "__format__", "fromkeys", "maketrans", "fromhex"}


class RemoteMeta(type):
    """The metaclass of the local classes standing for remote ones: calling one builds the object
    in the other process, and its class attributes are read there."""

    def __call__(cls, *args, **kwargs):
        peer = cls.__termrl_peer__
        if cls.__dict__.get("_class_rid") is None:
            raise TypeError("%s objects are made by the code under test, not here" % cls.__qualname__)
        if cls.__dict__.get("_class_gen") != peer.generation or peer.dead:
            path = cls.__dict__.get("_class_path")
            module = sys.modules.get(path[0]) if path else None
            if not isinstance(module, ProxyModule):
                raise CodeUnderTestDied("the code under test's process was restarted; this class went with it")
            getattr(module, path[1])  # the new worker's class: sets its id on this class
        return _remote_call(peer, cls.__dict__["_class_rid"], args, kwargs)

    def __getattr__(cls, name):
        rid = cls.__dict__.get("_class_rid")
        if rid is None or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        peer = cls.__termrl_peer__
        return peer.decode(peer.request("getattr", rid, name))


def _make_class(ty, base, peer):
    """A local class standing for one remote type: its methods and dunders are remote calls.
    ``base``: the builtin type its instances extend (their value is local, their own attributes
    remote)."""
    ns = {"__module__": ty["module"], "__qualname__": ty["qualname"], "__termrl_peer__": peer}

    def rid_of(self):
        return object.__getattribute__(self, "_rid")

    def forward(name):
        def method(self, *args):
            peer = _peer_of(self)
            if name == "__exit__":  # the exception crosses as a description, without its traceback
                sent = [None if args[0] is None else peer.encode_exception(args[1])]
            else:
                sent = [peer.encode(a) for a in args]
            return peer.decode(peer.request("dunder", rid_of(self), name, sent))
        method.__name__ = name
        return method

    def compare(name):
        def method(self, other):
            if isinstance(other, RemoteBase) and object.__getattribute__(other, "_peer") is \
                    object.__getattribute__(self, "_peer"):
                peer = _peer_of(self)
                return peer.decode(peer.request("dunder", rid_of(self), name, [peer.encode(other)]))
            return NotImplemented
        method.__name__ = name
        return method

    if base is None:
        for name in ty["dunders"]:
            if name in _COMPARE:
                ns[name] = compare(name)
            elif name in _FORWARDED:
                ns[name] = forward(name)
        if "__hash__" not in ty["dunders"]:
            ns["__hash__"] = None
        if "__eq__" not in ty["dunders"]:
            ns["__eq__"] = lambda self, other: True if self is other else NotImplemented
            ns["__hash__"] = object.__hash__
        ns.setdefault("__repr__", lambda self: "<remote %s>" % ty["qualname"])
    if "__call__" in ty["dunders"]:
        def call(self, *args, **kwargs):
            return _remote_call(_peer_of(self), rid_of(self), args, kwargs)
        ns["__call__"] = call

    def getattr_(self, name):
        if name.startswith("__") and name.endswith("__") and name not in ("__name__", "__qualname__", "__doc__",
                                                                          "__wrapped__", "__self__", "__func__"):
            raise AttributeError(name)
        peer = _peer_of(self)
        return peer.decode(peer.request("getattr", rid_of(self), name))

    def setattr_(self, name, value):
        peer = _peer_of(self)
        peer.request("setattr", rid_of(self), name, peer.encode(value))

    def delattr_(self, name):
        peer = _peer_of(self)
        peer.request("delattr", rid_of(self), name)

    def dir_(self):
        return _peer_of(self).request("dir", rid_of(self))

    if base in _MUTABLE:
        # the object changes as the test calls it: every method and dunder of the builtin runs on
        # the remote object (the instance's own storage is only its value when it arrived);
        # comparisons read its current value with the builtin's own methods
        for name in dir(base):
            if name in _LOCAL_NAMES or not callable(getattr(base, name, None)):
                continue
            if name in _COMPARE:
                ns[name] = mutable_compare(name, base)
            elif name.startswith("__"):
                ns[name] = forward(name)
            else:
                ns[name] = remote_method(name)

    def doc(self):
        peer = _peer_of(self)
        return peer.decode(peer.request("getattr", rid_of(self), "__doc__"))

    ns.update(__getattr__=getattr_, __setattr__=setattr_, __delattr__=delattr_, __dir__=dir_,
              __doc__=property(doc))
    bases = (RemoteBase,) if base is None else (base, RemoteBase)
    return RemoteMeta(_identifier(ty["name"]), bases, ns)


def remote_method(name):
    def method(self, *args, **kwargs):
        return _remote_call(_peer_of(self), object.__getattribute__(self, "_rid"), args, kwargs, method=name)
    method.__name__ = name
    return method


def mutable_compare(name, base):
    def method(self, other):
        peer = _peer_of(self)
        rid = object.__getattribute__(self, "_rid")
        if isinstance(other, RemoteBase) and object.__getattribute__(other, "_peer") is peer \
                and not isinstance(other, base):
            return peer.decode(peer.request("dunder", rid, name, [peer.encode(other)]))
        if isinstance(other, RemoteBase) and isinstance(other, base):
            other = peer.decode(peer.request("value", object.__getattribute__(other, "_rid"), base.__name__))
        return getattr(base, name)(peer.decode(peer.request("value", rid, base.__name__)), other)
    method.__name__ = name
    return method


def _refill(arg, new):
    """Copy a call's changes to a mutable argument back into the test's object."""
    try:
        if type(arg) is list and type(new) is list:
            arg[:] = new
        elif type(arg) is dict and type(new) is dict:
            arg.clear()
            arg.update(new)
        elif type(arg) is set and type(new) is set:
            arg.clear()
            arg.update(new)
        elif type(arg) is bytearray and type(new) is bytearray:
            arg[:] = new
    except Exception:
        pass


# --------------------------------------------------------------------------- the test process side


class Client(Peer):
    """The test process's end: starts the worker on first use and again after it died."""

    def __init__(self, exclude_paths, hidden=()):
        self.exclude_paths = set(exclude_paths)
        self.hidden = list(hidden)
        """Folders a worker the fork server made hides from itself before it imports any of the agent's
        code (``confine``); a worker this process starts is hidden from them as its child."""
        self.proc = None
        super().__init__(None, None, serves_all=False)
        self.dead = True
        self.seen = set()
        self.hung = set()
        """(name, location) of modules whose import a test's alarm cut short: importing one again
        (every test of a task that reloads the agent's module) would only hang again, costing a
        whole time limit per test for the same outcome."""

    def start(self):
        """Connect to a worker: the one the fork server made ready for this run (``TERMRL_WORKER``:
        its pid and pipes, once), else a new interpreter."""
        self.generation += 1
        ready = os.environ.pop("TERMRL_WORKER", "")
        if ready:
            pid, to_worker, from_worker = (int(v) for v in ready.split(","))
            self.proc = Forked(pid)
            w1, r2 = to_worker, from_worker
        else:
            r1, w1 = os.pipe()  # test -> worker
            r2, w2 = os.pipe()  # worker -> test
            env = _worker_env()
            import subprocess

            self.proc = subprocess.Popen([sys.executable, "-s", "-B", "-c", _LAUNCH,
                                          os.path.dirname(os.path.abspath(__file__)), str(r1), str(w2)],
                                         pass_fds=(r1, w2), stdin=subprocess.DEVNULL, env=env, cwd=os.getcwd(),
                                         close_fds=True)
            os.close(r1)
            os.close(w2)
        self.wfile = io.open(w1, "wb", buffering=65536)
        self.rfile = io.open(r2, "rb", buffering=65536)
        self.exported, self.proxies, self.dead = {}, {}, False

    def on_death(self, error):
        proc, self.proc = self.proc, None
        if proc is None:
            return "is gone"
        for f in (self.wfile, self.rfile):
            try:
                f.close()
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        if isinstance(error, EOFError) and error.args and isinstance(error.args[0], int):
            code = error.args[0]
        if isinstance(error, (EOFError, OSError, ValueError)):
            return ("died with signal %d" % -code) if code < 0 else "ended itself (exit code %d)" % code
        return "was stopped"

    def import_module(self, name, location=None):
        """(handle, names) of module ``name`` imported in the worker; ``location``: a file the test
        loads by path (``importlib.util.spec_from_file_location``) instead of by name."""
        if self.dead:
            if self.proc is not None:
                self.on_death(EOFError())
            self.start()
        path = [p for p in sys.path if os.path.abspath(p or ".") not in self.exclude_paths]
        # a module the test imports again (after taking it out of sys.modules, or a reload) is
        # imported afresh in the worker too; one it meets for the first time may already be there
        # (imported by another of the agent's modules), and is the same module then
        fresh = name in self.seen or location is not None
        self.seen.add(name)
        if (name, location) in self.hung:
            raise ImportTimedOut("importing %s ran past the test's time limit in an earlier test; its "
                                 "module-level code is not run again" % name)
        started = time.monotonic()
        try:
            return self.decode(self.request("import", None, name, path, os.getcwd(), fresh, _worker_env(),
                                            location, self.hidden if isinstance(self.proc, Forked) else ()))
        except Exception as e:
            # the report plugin's per-test alarm, spent mostly on this import (not on the test's own work)
            limit = float(os.environ.get("TERMRL_TEST_TIMEOUT") or 0)
            if type(e).__name__ == "TermrlTestTimeout" and time.monotonic() - started >= limit / 2:
                self.hung.add((name, location))
            raise

    def close(self):
        if self.proc is not None and not self.dead:
            self.dead = True
            self.on_death(EOFError())


def _worker_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TERMRL_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


class Forked:
    """A worker the fork server started (not this process's child): ``poll``/``kill``/``wait`` as
    for a ``Popen``, through its pid."""

    def __init__(self, pid):
        self.pid, self.code = pid, None

    def poll(self):
        if self.code is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.code = -9
        return self.code

    def kill(self):
        try:
            os.killpg(self.pid, 9)  # the supervisor leads the worker's session
        except (ProcessLookupError, PermissionError):
            pass
        self.code = -9 if self.code is None else self.code

    def wait(self):
        return self.code if self.code is not None else -9


class ProxyModule(types.ModuleType):
    """The test process's stand-in for a module of the agent's: every attribute is read from the
    worker's module when asked for (its state changes as the agent's code runs)."""

    def __getattribute__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in ("__all__", "__version__"):
            return super().__getattribute__(name)
        spec = super().__getattribute__("__dict__")
        handle = spec.get("__termrl_handle__")
        if handle is None or spec["__termrl_gen__"] != _CLIENT.generation or _CLIENT.dead:
            handle = _reimport(self)
        try:
            return _name(getattr(handle, name), spec["__name__"], name)
        except AttributeError:
            if name in spec:  # a submodule the import system set
                return spec[name]
            raise AttributeError("module %r has no attribute %r" % (spec["__name__"], name)) from None

    def __setattr__(self, name, value):
        if name.startswith("__") and name.endswith("__"):
            return super().__setattr__(name, value)
        handle = super().__getattribute__("__dict__").get("__termrl_handle__")
        if handle is not None and isinstance(value, RemoteBase) or not isinstance(value, types.ModuleType):
            if handle is not None:
                setattr(handle, name, value)
        super().__getattribute__("__dict__")[name] = value

    def __dir__(self):
        return dir(super().__getattribute__("__dict__")["__termrl_handle__"])


def _reimport(module):
    d = types.ModuleType.__getattribute__(module, "__dict__")
    handle, names = _CLIENT.import_module(d["__name__"], d.get("__termrl_file__"))
    d["__termrl_handle__"], d["__termrl_gen__"] = handle, _CLIENT.generation
    for key, value in names.items():
        d.setdefault(key, value)
    return handle


class Loader:
    """Loads a proxy module; ``location``: the file a test asked for by path, else by name.
    (Not an ``importlib.abc.Loader``: the import system only calls these two methods, and
    importing ``importlib.abc`` would double the worker's start-up imports.)"""

    def __init__(self, location=None):
        self.location = location

    def create_module(self, spec):
        module = ProxyModule(spec.name)
        if self.location is not None:
            types.ModuleType.__getattribute__(module, "__dict__")["__termrl_file__"] = self.location
        return module

    def exec_module(self, module):
        d = types.ModuleType.__getattribute__(module, "__dict__")
        handle, names = _CLIENT.import_module(d["__name__"], self.location)
        d["__termrl_handle__"], d["__termrl_gen__"] = handle, _CLIENT.generation
        for key, value in names.items():
            if key.startswith("__") and key not in ("__all__", "__doc__", "__version__"):
                continue
            d[key] = _name(value, d["__name__"], key)


class Finder:
    """First on ``sys.meta_path``: a module found on a writable filesystem loads as a proxy,
    unless the standard library (``libraries``) has a module of that name.

    The standard library wins because the tests import it too, often lazily and after they put
    the agent's folder first on ``sys.path``: a planted ``sqlite3/`` or ``filecmp.py`` would
    otherwise answer the tests' own reads and comparisons with values the agent's code chose."""

    def __init__(self, trusted, libraries=(), copies=(), test_files=False):
        self.trusted = tuple(os.path.realpath(p).rstrip("/") + "/" for p in trusted if p)
        self._dirs = {}
        self.test_files = test_files
        """Trust pytest's own test files (``test_*.py``, ``*_test.py``, ``conftest.py``) wherever
        they are: for a task's own script that runs the tests its workdir holds, as under Docker."""
        self.copies = _digests(copies)
        """Digests of the tests' own modules: a test script that copies a test file into the
        workdir before running pytest there (Terminal-Bench adapters do) runs a test, byte for byte."""
        self.libraries = [p for p in libraries if p and self.is_trusted(p)]

    def find_spec(self, name, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        where = spec.origin if spec.has_location else None
        places = [where] if where else list(spec.submodule_search_locations or ())
        if not places or all(self.is_trusted(p) for p in places):
            return None
        if path is None and self.libraries:
            own = importlib.machinery.PathFinder.find_spec(name, self.libraries)
            if own is not None:
                return own
        proxy = importlib.util.spec_from_loader(name, Loader(), origin=spec.origin,
                                                is_package=spec.submodule_search_locations is not None)
        if spec.submodule_search_locations is not None:
            proxy.submodule_search_locations = list(spec.submodule_search_locations)
        proxy.has_location = spec.has_location
        return proxy

    def is_trusted(self, place):
        real = os.path.realpath(place)
        if (real.rstrip("/") + "/").startswith(self.trusted):
            return True
        if self.copies and real.endswith(".py") and _digest(real) in self.copies:
            return True
        if self.test_files and _TEST_FILE.match(os.path.basename(real)):
            return True
        folder = real if os.path.isdir(real) else os.path.dirname(real)
        known = self._dirs.get(folder)
        if known is None:
            try:
                known = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
            except OSError:
                known = False
            self._dirs[folder] = known
        return known


_TEST_FILE = re.compile(r"^(test_.*|.*_test|conftest)\.py$")


def _digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _digests(folders):
    out = set()
    for folder in folders:
        for root, _, files in os.walk(folder):
            out.update(_digest(os.path.join(root, f)) for f in files if f.endswith(".py"))
    out.discard(None)
    return frozenset(out)


_CLIENT = None

STDLIB_FIRST = ("decimal", "fractions", "datetime", "pathlib", "uuid", "pickle", "subprocess")
"""Imported by the test process before the agent's files are on the path: the tests' values of
these classes are the stdlib's, whatever the agent's workspace names its modules."""


def install(trusted=(), tests=(), hidden=(), test_files=False):
    """Load the agent's modules as proxies from now on. ``trusted``: folders whose modules run in
    this process (the tests, the harness); read-only filesystems and the interpreter's own library
    are trusted too. ``tests``: folders the worker's path leaves out. ``hidden``: folders the
    worker can neither read nor change once it imports the agent's code (``confine``)."""
    global _CLIENT
    import sysconfig

    for module in STDLIB_FIRST:
        importlib.import_module(module)  # the stdlib's, before a planted file of the same name is on the path
    paths = sysconfig.get_paths()
    libs = [paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    _CLIENT = Client((os.path.abspath(p) for p in list(tests) + list(trusted) if p), hidden)
    finder = Finder(list(trusted) + list(tests) + libs, libraries=_libraries([paths.get("stdlib"), paths.get("platstdlib")]),
                    copies=[p for p in tests if p], test_files=test_files)
    sys.meta_path.insert(0, finder)
    by_path = importlib.util.spec_from_file_location

    def spec_from_file_location(name, location=None, *args, **kwargs):
        """Tests that load the agent's file by path get a proxy too."""
        spec = by_path(name, location, *args, **kwargs)
        where = getattr(spec, "origin", None)
        if spec is None or not where or not str(where).endswith(".py") or finder.is_trusted(str(where)) \
                or args or kwargs.get("loader") is not None:
            return spec
        proxy = importlib.util.spec_from_loader(name, Loader(os.path.abspath(str(where))), origin=str(where))
        proxy.has_location = True
        return proxy

    importlib.util.spec_from_file_location = spec_from_file_location
    close_dumps()
    return finder


def _libraries(libs):
    """The standard library's folders: ``sys.path``'s entries under the interpreter's prefixes
    (the stdlib, its zip, lib-dynload) and sysconfig's, without site- and dist-packages: which
    packages are installed differs between machines, and a task may name its own module like
    one of them; the standard library's names are fixed by the Python version."""
    prefixes = tuple(os.path.realpath(p).rstrip("/") + "/" for p in
                     {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix} if p)
    found = []
    for entry in list(sys.path) + [p for p in libs if p]:
        real = os.path.realpath(entry).rstrip("/") + "/" if entry and os.path.isabs(entry) else ""
        if real.startswith(prefixes) and entry not in found \
                and not any(part in ("site-packages", "dist-packages") for part in real.split("/")):
            found.append(entry)
    return found


def first(finder):
    """Put ``finder`` back in front of hooks installed after it (pytest's assertion rewriter)."""
    if sys.meta_path and sys.meta_path[0] is not finder:
        try:
            sys.meta_path.remove(finder)
        except ValueError:
            pass
        sys.meta_path.insert(0, finder)


def shutdown():
    if _CLIENT is not None:
        _CLIENT.close()


def close_dumps():
    """Close this process's memory and environment to other processes of the sandbox (the worker
    runs as the same user): /proc/<pid>/mem, environ and ptrace need a capability it lacks."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


# --------------------------------------------------------------------------- the worker side


class Output(io.TextIOBase):
    """The worker's sys.stdout / sys.stderr: what the code under test prints travels with the
    worker's next message and is printed by the test process, where pytest captures it."""

    def __init__(self, stream, chunks):
        super().__init__()
        self.stream, self.chunks = stream, chunks

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        self.chunks.append([self.stream, text])
        return len(text)

    def writable(self):
        return True

    def fileno(self):
        return self.stream

    @property
    def encoding(self):
        return "utf-8"


class Worker(Peer):
    def __init__(self, rfile, wfile):
        super().__init__(rfile, wfile, serves_all=True)
        self.chunks = []
        self.confined = False
        sys.stdout, sys.stderr = Output(1, self.chunks), Output(2, self.chunks)

    def take_output(self):
        if not self.chunks:
            return None
        out, self.chunks[:] = list(self.chunks), []
        return out

    def worker_import(self, name, path, cwd, fresh, env, location=None, hidden=()):
        if hidden and not self.confined:  # before the first of the agent's code runs here
            self.confined = confine.restrict(confine.hide(hidden))
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        sys.path[:] = [p for p in path]
        if os.getcwd() != cwd:
            os.chdir(cwd)
        if fresh:
            for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
                del sys.modules[key]
            importlib.invalidate_caches()
        if location is not None:  # loaded by path, as the test does: not registered by name
            spec = importlib.util.spec_from_file_location(name, location)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(name)
        names = {}
        for key, value in list(vars(module).items()):
            if key.startswith("__") and key not in ("__all__", "__doc__", "__version__"):
                continue
            if isinstance(value, types.ModuleType):
                continue  # the module's own imports: reached through the handle when asked for
            names[key] = value
        return [self.encode(module), self.encode(names)]

    def encode(self, x):
        if isinstance(x, types.ModuleType):
            return self._export(x)
        return super().encode(x)


def serve(rfd, wfd):
    """In a process the fork server forked for the next run (before it read the run's job, so no
    key is in its memory): lead a new session, fork the worker, and when the worker ends, tell the
    test process its exit status (``{"died": code}``): the worker is not the test process's child."""
    os.setsid()
    pid = os.fork()
    if pid == 0:
        _worker_main(rfd, wfd)
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    msg = json.dumps({"died": os.waitstatus_to_exitcode(status)}).encode()
    try:
        os.write(wfd, struct.pack(">I", len(msg)) + msg)
    except OSError:
        pass
    os._exit(0)


def _worker_main(rfd, wfd):
    rfile = io.open(rfd, "rb", buffering=65536)
    wfile = io.open(wfd, "wb", buffering=65536)
    worker = Worker(rfile, wfile)
    del sys.argv[1:]
    while True:
        try:
            msg = worker._recv()
        except EOFError:
            os._exit(0)
        worker._send(worker._serve(msg))


_LAUNCH = ("import sys; here = sys.argv[1]; sys.path[:] = [here, *(p for p in sys.path if p != '')]; "
           "import isolate; del sys.modules['isolate']; sys.modules.pop('confine', None); "
           "sys.path[:] = [p for p in sys.path if p != here]; "
           "isolate._worker_main(int(sys.argv[2]), int(sys.argv[3]))")
"""The worker's start: this module imported by name, so from its compiled copy beside it when
there is one (a script is compiled anew each run), then forgotten with ``confine`` (the agent's own ``isolate.py``
and ``confine.py`` must stay importable) and its folder taken off ``sys.path`` before any agent code runs. ``-c``'s
current-directory entry ('') is dropped before the first import, as running the file as a script
never had it."""
