# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""linkd: link in-memory objects through the linkd daemon (docs/kernels.md).

    import linkd
    out = linkd.link(["-shared", "k.o", "-o", "k.hsaco"], inputs={"k.o": obj})
    hsaco = out["k.hsaco"]

A ctypes binding of liblinkd (include/linkd/linkd.h): no build step, no LLVM
in this process, safe in threads and forked workers. A link that fails raises
LinkError carrying LLD's diagnostics and exit status.
"""

import ctypes
import os

__all__ = ["link", "link_result", "health", "LinkError", "Result", "version"]


class _Input(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("size", ctypes.c_size_t)]


class _Output(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("size", ctypes.c_size_t), ("mode", ctypes.c_uint)]


class _Options(ctypes.Structure):
    _fields_ = [("tool", ctypes.c_char_p), ("no_cache", ctypes.c_int),
                ("timeout_ms", ctypes.c_uint32)]


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
                ("blobs_uploaded", ctypes.c_uint32)]


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
    # Installed: <prefix>/lib/pythonX.Y/dist-packages/linkd -> <prefix>/lib;
    # build tree: build/lib/python/linkd -> build/lib.
    here = os.path.dirname(os.path.abspath(__file__))
    d = here
    for _ in range(4):
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


class Result:
    """What a link produced: outputs (name -> bytes), LLD's stdout and
    diagnostics, its exit status, and how it was served."""

    def __init__(self, exit_code, term_signal, outputs, stdout, diagnostics,
                 error, cache_hit, ran_locally, blobs_uploaded):
        self.exit_code = exit_code
        self.term_signal = term_signal
        self.outputs = outputs
        self.stdout = stdout
        self.diagnostics = diagnostics
        self.error = error
        self.cache_hit = cache_hit
        self.ran_locally = ran_locally
        self.blobs_uploaded = blobs_uploaded


class LinkError(Exception):
    """The link failed: `diagnostics` holds LLD's messages, `exit_code` its
    status (-1 if it did not run; `error` then says why)."""

    def __init__(self, result):
        self.result = result
        self.exit_code = result.exit_code
        self.diagnostics = result.diagnostics
        self.error = result.error
        super().__init__(result.error or result.diagnostics.strip() or
                         "link failed with exit status %d" % result.exit_code)


def _bytes(p, n):
    return ctypes.string_at(p, n) if n else b""


def link_result(args, inputs=None, tool="ld.lld", no_cache=False,
                timeout_ms=0):
    """Links and returns a Result whatever LLD said (no exception)."""
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
    opts = _Options(os.fsencode(tool), 1 if no_cache else 0, timeout_ms)
    r = _lib.linkd_link(argv, len(args), ins, len(inputs), ctypes.byref(opts))
    if not r:
        raise MemoryError("liblinkd could not allocate a result")
    try:
        c = r.contents
        outputs = {}
        for i in range(c.output_count):
            o = c.outputs[i]
            outputs[os.fsdecode(o.name)] = _bytes(o.data, o.size)
        return Result(c.exit_code, c.term_signal, outputs,
                      _bytes(c.stdout_text, c.stdout_size).decode("utf-8", "replace"),
                      _bytes(c.diagnostics, c.diagnostics_size).decode("utf-8", "replace"),
                      (c.error or b"").decode("utf-8", "replace"),
                      bool(c.cache_hit), bool(c.ran_locally), c.blobs_uploaded)
    finally:
        _lib.linkd_result_free(r)


def link(args, inputs=None, tool="ld.lld", no_cache=False, timeout_ms=0):
    """Links `inputs` (name -> bytes) with `args` (LLD's arguments, without
    argv[0]) and returns every output the link wrote (name -> bytes). Raises
    LinkError with LLD's diagnostics when the link fails."""
    r = link_result(args, inputs, tool, no_cache, timeout_ms)
    if r.exit_code != 0:
        raise LinkError(r)
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
