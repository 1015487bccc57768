// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/* liblinkd: link in-memory inputs through the linkd daemon and get the
 * outputs back as bytes (docs/kernels.md; the ABI's rules: docs/abi.md).
 *
 * For JIT and GPU compilers that link one kernel at a time: no temp files,
 * no LLD in the caller's process (LLD is not thread-safe and hangs after
 * fork), results cached by content across processes. The library contains no
 * LLVM, gRPC or protobuf and NEEDs only libc (and libm/libgcc_s), so it is
 * safe in a process with its own LLVM, in Python and Julia, and in forked
 * workers.
 *
 * Thread-safe with no global lock: every call has its own connection, so N
 * threads are N concurrent links in the daemon. The daemon is started on
 * first use like the ld.linkd client does (unless LINKD_NO_AUTOSTART); if
 * none can be had, the link runs in a child process over a private
 * temporary directory (unless LINKD_NO_FALLBACK), with the same bytes and
 * diagnostics.
 *
 * Errors are values: linkd_link never aborts and never returns NULL unless
 * memory is exhausted; `status` says what happened, `error` says it in
 * words. */
#ifndef LINKD_LINKD_H
#define LINKD_LINKD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header's ABI. It grows when something is added (a
 * status, a flag, a field at the end of a struct); nothing is ever removed
 * or reordered within one soname (liblinkd.so.1). */
#define LINKD_API_VERSION 2

/* What came of a call. The values are fixed; new ones may be added, so
 * treat an unknown value as a failure of linkd's (not of the link). */
typedef enum linkd_status {
  LINKD_OK = 0,             /* the link ran and LLD exited 0 */
  LINKD_LINK_FAILED = 1,    /* the link ran and LLD reported an error:
                               exit_code and diagnostics say which */
  LINKD_LINKER_CRASHED = 2, /* the linker died of a signal (term_signal) */
  LINKD_BAD_ARGUMENT = 3,   /* refused before linking: argv, an input, an
                               option, or an output outside the link's
                               working directory */
  LINKD_NO_DAEMON = 4,      /* no daemon could be had and LINKD_NO_FALLBACK */
  LINKD_NO_LINKER = 5,      /* no daemon, and no linker for a local link */
  LINKD_TIMEOUT = 6,        /* timeout_ms passed; the link was stopped */
  LINKD_IO_ERROR = 7,       /* a temporary directory, pipe or process */
  LINKD_DAEMON_ERROR = 8    /* the daemon broke off or sent nonsense */
} linkd_status;

/* How a link was served. */
typedef enum linkd_served {
  LINKD_SERVED_NOT_RUN = 0,  /* the link did not run (see status) */
  LINKD_SERVED_HIT = 1,      /* from the daemon's cache */
  LINKD_SERVED_MISS = 2,     /* the daemon linked it and stored it */
  LINKD_SERVED_UNCACHED = 3, /* the daemon linked it and did not store it:
                                `uncacheable` says why */
  LINKD_SERVED_LOCAL = 4     /* no daemon: a stock linker in a child
                                process over a private directory */
} linkd_served;

/* linkd_options.flags */
#define LINKD_NO_CACHE 0x1u /* neither look up nor store this link */
#define LINKD_NO_AUTOSTART                                                     \
  0x2u /* never start a daemon (a JIT process in a                             \
          fresh container that must leave nothing                              \
          running behind it) */
#define LINKD_NO_FALLBACK                                                      \
  0x4u                        /* no daemon: fail with LINKD_NO_DAEMON          \
                                 rather than link locally */
#define LINKD_LOCAL_ONLY 0x8u /* never ask a daemon: link locally */

/* A named input: `name` is how the link's argv refers to it ("k.o",
 * "lib/libdevice.a"); a relative name is relative to the link's working
 * directory. Names have no empty, "." or ".." components. */
typedef struct linkd_input {
  const char *name;
  const void *data;
  size_t size;
} linkd_input;

/* A file the link wrote, by the name the link wrote it under (relative to
 * the link's working directory). */
typedef struct linkd_output {
  const char *name;
  const void *data;
  size_t size;
  unsigned mode;
} linkd_output;

/* Set struct_size to sizeof(linkd_options) (LINKD_OPTIONS_INIT does): the
 * library reads only the fields the caller's struct has, so a program built
 * against this header keeps working with a later library that has more. */
typedef struct linkd_options {
  uint32_t struct_size;
  uint32_t flags; /* LINKD_NO_CACHE | LINKD_NO_AUTOSTART | ... */
  /* "ld.lld" (ELF, also AMDGPU code objects), "wasm-ld", "ld64.lld",
   * "lld-link", or "lld" with "-flavor F" first in argv; NULL = "ld.lld".
   * LLD prefixes its diagnostics with it. */
  const char *tool;
  uint32_t timeout_ms; /* 0: no limit of the caller's (the daemon's applies) */
  uint32_t reserved0;  /* 0 */
  /* The linker a local link runs (no daemon): NULL = $LINKD_FALLBACK_LINKER,
   * else ld.lld, then lld, on PATH (docs/kernels.md). */
  const char *fallback_linker;
} linkd_options;

#define LINKD_OPTIONS_INIT                                                     \
  { sizeof(linkd_options), 0, NULL, 0, 0, NULL }

typedef struct linkd_result {
  /* LLD's exit status (0: linked); -1 when the link did not run (see
   * `status` and `error`). */
  int exit_code;
  int term_signal; /* the link child died of this signal (0: it did not) */
  const char *diagnostics; /* LLD's stderr, NUL-terminated */
  size_t diagnostics_size;
  const char *stdout_text; /* LLD's stdout (--version, -M, ...) */
  size_t stdout_size;
  const linkd_output *outputs; /* every file the link wrote */
  size_t output_count;
  /* linkd's own problem in words ("" when none). LLD's errors are in
   * `diagnostics`. */
  const char *error;
  int cache_hit;           /* 1: answered from the cache (served == HIT) */
  int ran_locally;         /* 1: no daemon; linked in a child process */
  uint32_t blobs_uploaded; /* inputs the daemon did not have */
  /* Added in API version 2. */
  linkd_status status;
  linkd_served served;
  /* Why the daemon did not store the result ("" when it did, or when it was
   * a hit): the caller's LINKD_NO_CACHE, the daemon's cache being off, or the
   * link reading files that are not inputs. */
  const char *uncacheable;
} linkd_result;

/* Links `inputs` with `argv` (the linker's arguments, without argv[0]).
 * Free the result with linkd_result_free. `options` may be NULL. */
linkd_result *linkd_link(const char *const *argv, size_t argc,
                         const linkd_input *inputs, size_t input_count,
                         const linkd_options *options);

/* The output named `name`, or NULL. */
const linkd_output *linkd_result_output(const linkd_result *result,
                                        const char *name);

void linkd_result_free(linkd_result *result);

/* A status's name ("LINKD_TIMEOUT"); "LINKD_UNKNOWN_STATUS" for others. */
const char *linkd_status_name(linkd_status status);

typedef struct linkd_health {
  int daemon;            /* 1: a daemon answered */
  char version[64];      /* the daemon's linkd version */
  char lld_version[128]; /* the LLD it links with */
  uint64_t active_links;
  uint64_t links_total; /* kernel links since the daemon started */
  uint64_t cache_hits, cache_misses;
  char error[256]; /* why no daemon answered */
} linkd_health;

/* Asks the daemon how it is (starting it if `autostart`). 0 if it answered,
 * else -1 with `error` set. */
int linkd_health_check(linkd_health *out, int autostart);

/* The library's own version ("0.1.0") and LINKD_API_VERSION. */
const char *linkd_version(void);
int linkd_api_version(void);

#ifdef __cplusplus
}
#endif

#endif
