"""The hidden tests, out of reach of the agent's code while they run (Linux Landlock).

The test process must read the tests; the code under test must not: a module that reads
``/tests`` at import can look up every expected answer and return it. The code under test
runs in two kinds of process the test process starts, and both are confined here before
any of the agent's code runs in them:

- the isolation's worker (``isolate``), which imports the agent's modules: ``restrict(hide(folders))``
  on its first import;
- every program a test starts with ``subprocess`` (a family's harness that imports the
  agent's module, the agent's script or binary): ``confine_children(folders)`` gives each child,
  between fork and exec, a Landlock domain in which the folders can be neither read, listed,
  executed nor written. A child whose program is the tests' own (its executable, or the script
  an interpreter runs, lies in a hidden folder) is not confined: it is the test's code. A path
  in a hidden folder that a test names on a confined child's command line stays readable to
  that child (a test that hands the agent's program an input file), and nothing else of the
  folder.

Landlock needs Linux 5.13 or later, where unprivileged processes may use it (a container's
seccomp profile may refuse it); ``hide`` returns None where it cannot, and the report plugin
says so in its report (``TestsData.tests_hidden``). A Landlock domain covers everything a
confined process starts after it; files opened before it stay open (the test process opens
none of the hidden files in a child's reach: it is non-dumpable, so its descriptors are
closed to the child's ``/proc``). Covered: ``subprocess`` and what is built on it
(``os.popen``, ``asyncio``'s subprocesses), and ``os.system``, which is routed through it.
Not covered: ``os.posix_spawn``, ``os.fork`` and ``pty.spawn`` called by a test directly.

Stdlib only: this file runs on the sandbox's Python (3.8+).
"""

import ctypes
import os

_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446
"""landlock_create_ruleset, landlock_add_rule, landlock_restrict_self: one number on every
architecture (syscalls added since Linux 5.1 share the table)."""
_VERSION = 1
_PATH_BENEATH = 1
_NO_NEW_PRIVS = 38
_O_PATH = getattr(os, "O_PATH", 0o10000000)

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
_ABI1 = (1 << 13) - 1
"""Every filesystem right of Landlock's first ABI: execute, write, read, read a folder, remove,
make (char, dir, file, socket, fifo, block, symlink)."""
REFER, TRUNCATE = 1 << 13, 1 << 14

_libc = None


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc.syscall


def abi():
    """Landlock's ABI version on this kernel, 0 where there is none (or it is refused)."""
    try:
        version = _syscall()(_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, version)


def hide(folders, show=()):
    """A Landlock ruleset (its file descriptor) under which nothing in ``folders`` can be read,
    listed, executed or changed, and everything else can; paths in ``show`` stay open even
    inside a hidden folder. None where the kernel has no Landlock for this process.

    The ruleset allows each entry beside the way to a hidden folder: every entry of ``/``
    but the first component of its path, and so on down. An entry made later in a folder on
    that way (``/`` itself, say) is not reachable; below an allowed entry (``/tmp``, the
    workspace) everything is."""
    version = abi()
    folders = [os.path.realpath(f) for f in folders if f and os.path.isabs(f)]
    if not version or not folders:
        return None
    handled = _ABI1 | (REFER if version >= 2 else 0) | (TRUNCATE if version >= 3 else 0)
    syscall = _syscall()
    attr = _RulesetAttr(handled)
    fd = syscall(_CREATE, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if fd < 0:
        return None
    try:
        _allow_beside(fd, "/", folders, handled)
        for path in show:
            _allow(fd, os.path.realpath(path), handled)
    except OSError:
        os.close(fd)
        return None
    return fd


def _allow_beside(fd, folder, hidden, handled):
    """Allow every entry of ``folder`` that neither is nor leads to a ``hidden`` path (both as
    the entry's real path: a link to a hidden folder is hidden too)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return  # a folder it cannot list: its entries stay closed
    for name in names:
        path = os.path.join(folder, name)
        real = os.path.realpath(path)
        if real == "/" or any(real == h or real.startswith(h + "/") for h in hidden):
            continue  # hidden (or a link into a hidden folder), or a link back to the root above it all
        if any(h.startswith(real + "/") for h in hidden):
            _allow_beside(fd, real, hidden, handled)
        else:
            _allow(fd, real, handled)


def _allow(fd, path, handled):
    try:
        target = os.open(path, _O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone, or a dangling link
    try:
        rights = handled
        if not os.path.isdir(path):  # a file takes only the rights of a file
            rights &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
        rule = _PathBeneath(rights, target)
        if _syscall()(_ADD_RULE, fd, ctypes.c_int(_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule(%s): %s" % (path, os.strerror(ctypes.get_errno())))
    finally:
        os.close(target)


def restrict(fd):
    """Put this process (and all it starts from now on) under ruleset ``fd``; True if it is."""
    if fd is None:
        return False
    _libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0)
    return _syscall()(_RESTRICT, fd, ctypes.c_uint32(0)) == 0


_WRAPPERS = {"env": (), "timeout": ("-s", "--signal", "-k", "--kill-after"), "nice": ("-n",),
             "stdbuf": ("-i", "-o", "-e"), "setsid": ()}
"""Programs that run the rest of their command line (with the options that take a value)."""


def _unwrapped(argv):
    """``argv`` past ``env VAR=1``, ``timeout 10``, ``nice -n 5``, ``stdbuf -oL``, ``setsid``."""
    argv = [os.fsdecode(a) for a in argv]
    while argv and os.path.basename(argv[0]) in _WRAPPERS:
        takes_value, rest = _WRAPPERS[os.path.basename(argv[0])], argv[1:]
        while rest and (rest[0].startswith("-") or "=" in rest[0]):
            rest = rest[2:] if rest[0] in takes_value else rest[1:]
        if os.path.basename(argv[0]) == "timeout" and rest:
            rest = rest[1:]  # the duration
        argv = rest
    return argv


def own_program(argv, folders):
    """Whether the program ``argv`` runs is the tests' own: its executable, or the script an
    interpreter (a name starting ``python``, ``bash``, ``sh``, ``node``, ``perl``...) runs, lies in
    one of ``folders``; through ``env``, ``timeout``, ``nice``, ``stdbuf`` and ``setsid``."""
    argv = _unwrapped(argv)
    if not argv:
        return False
    first = argv[0]
    if _inside(first, folders):
        return True
    if os.path.basename(first).rstrip("0123456789.") not in ("python", "bash", "sh", "dash", "node", "perl",
                                                              "ruby", "pytest", "py.test"):
        return False
    for arg in argv[1:]:
        if arg == "-c":  # code on the command line: not a file of the tests
            return False
        if arg == "-m":  # a module: the tests' own only as pytest run on them
            rest = argv[argv.index(arg) + 1:]
            return rest[:1] in (["pytest"], ["py.test"]) and any(_inside(a, folders) for a in rest[1:])
        if not arg.startswith("-"):
            return _inside(arg, folders)
    return False


def named(argv, folders):
    """Paths inside ``folders`` that ``argv`` names (as an argument or ``--opt=PATH``). A working
    directory inside them does not count: the isolation's worker starts in the test's."""
    found = []
    for arg in argv:
        for part in {arg, arg.split("=", 1)[-1]}:
            if _inside(part, folders) and os.path.exists(part):
                found.append(part)
    return found


def _words(command):
    import shlex

    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _inside(path, folders):
    if not isinstance(path, str) or not path.startswith("/"):
        return False
    real = os.path.realpath(path)
    return any(real == f or real.startswith(f.rstrip("/") + "/") for f in folders)


def confine_children(folders):
    """From now on, every child ``subprocess`` starts is confined (see the module's docstring):
    ``folders`` hidden from it unless its program is the tests' own. Returns whether Landlock is
    there to do it."""
    import subprocess

    folders = [os.path.realpath(f) for f in folders if f and os.path.isabs(f)]
    base = hide(folders)
    if base is None:
        return False
    original = subprocess.Popen._execute_child

    def _execute_child(self, args, executable, preexec_fn, *rest):
        argv = [os.fsdecode(a) for a in ([args] if isinstance(args, (str, bytes, os.PathLike)) else args)]
        if len(rest) > 6 and rest[6] and argv:  # shell=True: the command is one string
            argv = _words(argv[0])
        if own_program([executable or argv[0], *argv[1:]] if argv else [], folders):
            return original(self, args, executable, preexec_fn, *rest)
        show = named(argv, folders)
        fd = hide(folders, show) if show else None
        if fd is None:  # nothing named, or the named paths could not be opened to it: all stay hidden
            fd = base

        def confined():
            if not restrict(fd):
                raise OSError("the tests' folders could not be hidden from this program (Landlock)")
            if preexec_fn is not None:
                preexec_fn()

        try:
            return original(self, args, executable, confined, *rest)
        finally:
            if fd is not base:
                os.close(fd)

    def system(command):
        """``os.system`` through ``subprocess``, so its shell is confined too; the same status."""
        code = subprocess.call(command, shell=True)
        return code << 8 if code >= 0 else -code

    _syscall()
    subprocess.Popen._execute_child = _execute_child
    os.system = system
    return True
