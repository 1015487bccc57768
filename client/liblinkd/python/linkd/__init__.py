# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""linkd: link in-memory objects through the linkd daemon (docs/kernels.md).

    import linkd
    out = linkd.link(["-shared", "k.o", "-o", "k.hsaco"], inputs={"k.o": obj})
    hsaco = out["k.hsaco"]

A ctypes binding of liblinkd (include/linkd/linkd.h): no build step, no LLVM
in this process, safe in threads and forked workers. A link that fails raises
the Error subclass of its status: LinkError carrying LLD's diagnostics and
exit status, Timeout, NoLinker, BadArgument, ...
"""

import ctypes
import os

__all__ = ["link", "link_result", "health", "version", "lld_path", "Result",
           "Error", "LinkError", "LinkerCrashed", "BadArgument", "NoDaemon",
           "NoLinker", "Timeout", "IOError_", "DaemonError"]


class _Input(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("size", ctypes.c_size_t)]


class _Output(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("size", ctypes.c_size_t), ("mode", ctypes.c_uint)]


class _Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("tool", ctypes.c_char_p), ("timeout_ms", ctypes.c_uint32),
                ("reserved0", ctypes.c_uint32),
                ("fallback_linker", ctypes.c_char_p)]


class _Result(ctypes.Structure):
    _fields_ = [("exit_code", ctypes.c_int), ("term_signal", ctypes.c_int),
                ("diagnostics", ctypes.c_void_p),
                ("diagnostics_size", ctypes.c_size_t),
                ("stdout_text", ctypes.c_void_p),
                ("stdout_size", ctypes.c_size_t),
                ("outputs", ctypes.POINTER(_Output)),
                ("output_count", ctypes.c_size_t),
                ("error", ctypes.c_char_p), ("cache_hit", ctypes.c_int),
                ("ran_locally", ctypes.c_int),
                ("blobs_uploaded", ctypes.c_uint32),
                ("status", ctypes.c_int), ("served", ctypes.c_int),
                ("uncacheable", ctypes.c_char_p)]


# linkd_options.flags (include/linkd/linkd.h)
NO_CACHE, NO_AUTOSTART, NO_FALLBACK, LOCAL_ONLY = 0x1, 0x2, 0x4, 0x8

# linkd_status, by value
OK, LINK_FAILED, LINKER_CRASHED, BAD_ARGUMENT, NO_DAEMON, NO_LINKER, \
    TIMEOUT, IO_ERROR, DAEMON_ERROR = range(9)
_SERVED = {0: "not-run", 1: "hit", 2: "miss", 3: "uncached", 4: "local"}


class _Health(ctypes.Structure):
    _fields_ = [("daemon", ctypes.c_int), ("version", ctypes.c_char * 64),
                ("lld_version", ctypes.c_char * 128),
                ("active_links", ctypes.c_uint64),
                ("links_total", ctypes.c_uint64),
                ("cache_hits", ctypes.c_uint64),
                ("cache_misses", ctypes.c_uint64),
                ("error", ctypes.c_char * 256)]


def _find_library():
    explicit = os.environ.get("LINKD_LIBRARY")
    if explicit:
        return explicit
    # The wheel: beside this file. Installed: <prefix>/lib/pythonX.Y/
    # site-packages/linkd -> <prefix>/lib; build tree: build/lib/python/linkd
    # -> build/lib; else the loader's search (/usr/lib/<triplet>).
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.path.join(here, "_")
    for _ in range(5):
        d = os.path.dirname(d)
        for name in ("liblinkd.so.1", "liblinkd.so"):
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
    return "liblinkd.so.1"


_lib = ctypes.CDLL(_find_library())
_lib.linkd_link.restype = ctypes.POINTER(_Result)
_lib.linkd_link.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                            ctypes.POINTER(_Input), ctypes.c_size_t,
                            ctypes.POINTER(_Options)]
_lib.linkd_result_free.argtypes = [ctypes.POINTER(_Result)]
_lib.linkd_result_free.restype = None
_lib.linkd_health_check.argtypes = [ctypes.POINTER(_Health), ctypes.c_int]
_lib.linkd_health_check.restype = ctypes.c_int
_lib.linkd_version.restype = ctypes.c_char_p
_lib.linkd_api_version.restype = ctypes.c_int
if _lib.linkd_api_version() < 2:
    raise ImportError("%s is liblinkd API %d; this module needs 2" %
                      (_lib._name, _lib.linkd_api_version()))


class Result:
    """What a link produced: outputs (name -> bytes), LLD's stdout and
    diagnostics, its exit status, the call's status (linkd_status) and how
    it was served ("hit", "miss", "uncached", "local", "not-run")."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


class Error(Exception):
    """A link that did not produce its outputs. `status` is the
    linkd_status, `error` linkd's message, `result` the whole Result."""

    def __init__(self, result):
        self.result = result
        self.status = result.status
        self.exit_code = result.exit_code
        self.diagnostics = result.diagnostics
        self.error = result.error
        super().__init__(result.error or result.diagnostics.strip() or
                         "link failed with exit status %d" % result.exit_code)


class LinkError(Error):
    """LLD ran and failed: `diagnostics` holds its messages, `exit_code` its
    status."""


class LinkerCrashed(LinkError):
    """The linker died of a signal (`result.term_signal`)."""


class BadArgument(Error, ValueError):
    """The call was refused before linking (argv, an input, an option, an
    output outside the link's working directory)."""


class NoDaemon(Error):
    """No daemon could be had and fallback=False."""


class NoLinker(Error):
    """No daemon, and no linker for a local link: the message names every
    place looked at (pass fallback_linker= or set LINKD_FALLBACK_LINKER)."""


class Timeout(Error, TimeoutError):
    """timeout_ms passed; the link was stopped."""


class IOError_(Error, OSError):
    """A temporary directory, pipe or process could not be had."""


class DaemonError(Error):
    """The daemon broke off or sent something malformed."""


_ERRORS = {LINK_FAILED: LinkError, LINKER_CRASHED: LinkerCrashed,
           BAD_ARGUMENT: BadArgument, NO_DAEMON: NoDaemon,
           NO_LINKER: NoLinker, TIMEOUT: Timeout, IO_ERROR: IOError_,
           DAEMON_ERROR: DaemonError}


def _bytes(p, n):
    return ctypes.string_at(p, n) if n else b""


def link_result(args, inputs=None, tool="ld.lld", no_cache=False,
                timeout_ms=0, autostart=True, fallback=True,
                fallback_linker=None, local_only=False):
    """Links and returns a Result whatever happened (no exception)."""
    inputs = inputs or {}
    argv = (ctypes.c_char_p * max(len(args), 1))(
        *[os.fsencode(a) for a in args])
    keep = []
    ins = (_Input * max(len(inputs), 1))()
    for i, (name, data) in enumerate(inputs.items()):
        data = bytes(data)
        buf = ctypes.create_string_buffer(data, len(data))
        keep.append(buf)
        ins[i] = _Input(os.fsencode(name), ctypes.cast(buf, ctypes.c_void_p),
                        len(data))
    flags = ((NO_CACHE if no_cache else 0) |
             (0 if autostart else NO_AUTOSTART) |
             (0 if fallback else NO_FALLBACK) |
             (LOCAL_ONLY if local_only else 0))
    opts = _Options(ctypes.sizeof(_Options), flags, os.fsencode(tool),
                    timeout_ms, 0,
                    os.fsencode(fallback_linker) if fallback_linker else None)
    r = _lib.linkd_link(argv, len(args), ins, len(inputs), ctypes.byref(opts))
    if not r:
        raise MemoryError("liblinkd could not allocate a result")
    try:
        c = r.contents
        outputs = {}
        for i in range(c.output_count):
            o = c.outputs[i]
            outputs[os.fsdecode(o.name)] = _bytes(o.data, o.size)
        text = lambda p, n: _bytes(p, n).decode("utf-8", "replace")
        return Result(
            exit_code=c.exit_code, term_signal=c.term_signal, outputs=outputs,
            stdout=text(c.stdout_text, c.stdout_size),
            diagnostics=text(c.diagnostics, c.diagnostics_size),
            error=(c.error or b"").decode("utf-8", "replace"),
            status=c.status, served=_SERVED.get(c.served, "unknown"),
            uncacheable=(c.uncacheable or b"").decode("utf-8", "replace"),
            cache_hit=bool(c.cache_hit), ran_locally=bool(c.ran_locally),
            blobs_uploaded=c.blobs_uploaded)
    finally:
        _lib.linkd_result_free(r)


def link(args, inputs=None, **options):
    """Links `inputs` (name -> bytes) with `args` (LLD's arguments, without
    argv[0]) and returns every output the link wrote (name -> bytes). Raises
    the Error subclass of the call's status otherwise (LinkError with LLD's
    diagnostics when the link itself failed). Options as link_result's."""
    r = link_result(args, inputs, **options)
    if r.status != OK:
        raise _ERRORS.get(r.status, Error)(r)
    return r.outputs


def health(autostart=True):
    """The daemon's versions and counters, as a dict; raises OSError if no
    daemon answers."""
    h = _Health()
    if _lib.linkd_health_check(ctypes.byref(h), 1 if autostart else 0) != 0:
        raise OSError(h.error.decode("utf-8", "replace"))
    return {"version": h.version.decode(), "lld_version": h.lld_version.decode(),
            "active_links": h.active_links, "links_total": h.links_total,
            "cache_hits": h.cache_hits, "cache_misses": h.cache_misses}


def version():
    """liblinkd's version."""
    return _lib.linkd_version().decode()


def lld_path():
    """A linker executable to hand to tools that run one (Triton's
    TRITON_HIP_LLD_PATH, a -fuse-ld= or --ld-path=): the thin client, which
    takes LLD's command lines (`-flavor gnu` first included) and links
    through the daemon, or without one through a stock LLD. The wheel's own
    static client, else the build tree's or an installation's, else PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "bin", "ld.linkd"),
                      os.path.join(here, "..", "..", "..", "bin", "ld.linkd"),
                      os.path.join(here, "..", "..", "..", "..", "bin",
                                   "ld.linkd")):
        if os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    import shutil
    found = shutil.which("ld.linkd")
    if not found:
        raise FileNotFoundError("no ld.linkd beside the linkd module or on "
                                "PATH")
    return found
