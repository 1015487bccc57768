// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/* liblinkd: link in-memory inputs through the linkd daemon and get the
 * outputs back as bytes (docs/kernels.md).
 *
 * For JIT and GPU compilers that link one kernel at a time: no temp files,
 * no LLD in the caller's process (LLD is not thread-safe and hangs after
 * fork), results cached by content across processes. The library contains no
 * LLVM, gRPC or protobuf; it links libc and libcrypto only, so it is safe in
 * a process with its own LLVM, in Python and Julia, and in forked workers.
 *
 * Thread-safe with no global lock: every call has its own connection, so N
 * threads are N concurrent links in the daemon. The daemon is started on
 * first use like the ld.linkd client does; if none can be had, the link runs
 * in a child process (`linkd-lld link`) over a temporary directory, with the
 * same bytes and diagnostics.
 *
 * Errors are values: linkd_link never aborts and never returns NULL unless
 * memory is exhausted. */
#ifndef LINKD_LINKD_H
#define LINKD_LINKD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LINKD_API_VERSION 1

/* A named input: `name` is how the link's argv refers to it ("k.o",
 * "lib/libdevice.a", "/abs/x.o"); a relative name is relative to the link's
 * working directory. Names have no empty, "." or ".." components. */
typedef struct linkd_input {
  const char *name;
  const void *data;
  size_t size;
} linkd_input;

/* A file the link wrote, by the name the link wrote it under. */
typedef struct linkd_output {
  const char *name;
  const void *data;
  size_t size;
  unsigned mode;
} linkd_output;

typedef struct linkd_options {
  /* "ld.lld" (ELF, also AMDGPU code objects), "wasm-ld", "ld64.lld",
   * "lld-link", or "lld" with "-flavor F" first in argv; NULL = "ld.lld".
   * LLD prefixes its diagnostics with it. */
  const char *tool;
  int no_cache;        /* 1: neither look up nor store this link */
  uint32_t timeout_ms; /* 0: no limit of the caller's (the daemon's applies) */
} linkd_options;

typedef struct linkd_result {
  /* LLD's exit status (0: linked); -1 when the link did not run (see
   * `error`). */
  int exit_code;
  int term_signal; /* the link child died of this signal (0: it did not) */
  const char *diagnostics; /* LLD's stderr, NUL-terminated */
  size_t diagnostics_size;
  const char *stdout_text; /* LLD's stdout (--version, -M, ...) */
  size_t stdout_size;
  const linkd_output *outputs; /* every file the link wrote */
  size_t output_count;
  /* linkd's own problem ("" when none): bad arguments, timeout, no daemon and
   * no linkd-lld to run. LLD's errors are in `diagnostics`. */
  const char *error;
  int cache_hit;   /* 1: answered from the cache */
  int ran_locally; /* 1: no daemon; linked in a child process */
  uint32_t blobs_uploaded; /* inputs the daemon did not have */
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

typedef struct linkd_health {
  int daemon; /* 1: a daemon answered */
  char version[64];      /* the daemon's linkd version */
  char lld_version[128]; /* the LLD it links with */
  uint64_t active_links;
  uint64_t links_total; /* blob links since the daemon started */
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
