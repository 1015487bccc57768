// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/* Test driver for liblinkd, compiled by clang-19 in the kernel tests.
 *
 *   klink [--tool T] [--no-cache] [--no-autostart] [--no-fallback] [--local]
 *         [--fallback-linker PATH] [--struct-size N] [--timeout MS] [--threads
 * N] [--fork]
 *         [--out DIR] [--in NAME=PATH]... [--each K] -- ARGS...
 *
 * Links the inputs with ARGS through linkd_link, writes every output to
 * DIR/<name> (default "."; a name with a '/' is flattened with '_'), LLD's
 * stdout/stderr to ours, and prints one line "rc=R hit=H local=L
 * uploaded=U outputs=N status=S served=V uncacheable=[W] names=[A,B]
 * error=E" to the file $KLINK_REPORT (appended; tests parse it); S is
 * linkd_status_name's.
 * --threads N --each K: job j (0 <= j < N*K) links with every "%d" in the
 * inputs' names/paths and ARGS replaced by j, N threads at once.
 * --fork: link once, fork, link again in the child (the child's status is
 * ours). */
#include <linkd/linkd.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *tool = NULL, *outDir = ".", *fallbackLinker = NULL;
static unsigned flags, structSize = sizeof(linkd_options);
static int threads = 1, each = 1, doFork;
static unsigned timeoutMs;
static char **inSpecs, **args;
static int nIn, nArgs;

static char *subst(const char *s, int j) {
  char *out = malloc(strlen(s) + 32), *o = out;
  for (; *s; ++s) {
    if (s[0] == '%' && s[1] == 'd') {
      o += sprintf(o, "%d", j);
      ++s;
    } else {
      *o++ = *s;
    }
  }
  *o = 0;
  return out;
}

static void *readAll(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(n ? n : 1);
  if (fread(p, 1, n, f) != (size_t)n)
    exit(2);
  fclose(f);
  *size = n;
  return p;
}

static int linkOne(int j, int quiet) {
  linkd_input *ins = calloc(nIn ? nIn : 1, sizeof *ins);
  for (int i = 0; i < nIn; ++i) {
    char *spec = subst(inSpecs[i], j), *eq = strchr(spec, '=');
    *eq = 0;
    ins[i].name = spec;
    ins[i].data = readAll(eq + 1, &ins[i].size);
  }
  const char **argv = calloc(nArgs + 1, sizeof *argv);
  for (int i = 0; i < nArgs; ++i)
    argv[i] = subst(args[i], j);
  linkd_options opt = LINKD_OPTIONS_INIT;
  opt.tool = tool;
  opt.flags = flags;
  opt.timeout_ms = timeoutMs;
  opt.fallback_linker = fallbackLinker;
  opt.struct_size = structSize;
  linkd_result *r = linkd_link(argv, nArgs, ins, nIn, &opt);
  if (!r)
    return 3;
  char names[8192] = "";
  for (size_t i = 0; i < r->output_count; ++i) {
    char path[4096], flat[4096];
    snprintf(flat, sizeof flat, "%s", r->outputs[i].name);
    for (char *c = flat; *c; ++c)
      if (*c == '/')
        *c = '_';
    snprintf(path, sizeof path, "%s/%s", outDir, flat);
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
             i ? "," : "", r->outputs[i].name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(r->outputs[i].data, 1, r->outputs[i].size, f) !=
                  r->outputs[i].size)
      return 4;
    fclose(f);
  }
  if (!quiet) {
    fwrite(r->stdout_text, 1, r->stdout_size, stdout);
    fwrite(r->diagnostics, 1, r->diagnostics_size, stderr);
    FILE *rep =
        getenv("KLINK_REPORT") ? fopen(getenv("KLINK_REPORT"), "a") : NULL;
    if (rep) {
      fprintf(rep,
              "rc=%d hit=%d local=%d uploaded=%u outputs=%zu status=%s "
              "served=%d uncacheable=[%s] names=[%s] error=%s\n",
              r->exit_code, r->cache_hit, r->ran_locally, r->blobs_uploaded,
              r->output_count, linkd_status_name(r->status), (int)r->served,
              r->uncacheable, names, r->error);
      fclose(rep);
    }
  }
  int rc = r->exit_code;
  if (rc < 0)
    fprintf(stderr, "klink: %s\n", r->error);
  linkd_result_free(r);
  return rc < 0 ? 5 : rc;
}

static int failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
  int t = (int)(long)arg;
  for (int k = 0; k < each; ++k)
    if (linkOne(t * each + k, 1) != 0) {
      pthread_mutex_lock(&mu);
      ++failures;
      pthread_mutex_unlock(&mu);
    }
  return NULL;
}

int main(int argc, char **argv) {
  inSpecs = calloc(argc, sizeof *inSpecs);
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--"); ++i) {
    if (!strcmp(argv[i], "--tool"))
      tool = argv[++i];
    else if (!strcmp(argv[i], "--no-cache"))
      flags |= LINKD_NO_CACHE;
    else if (!strcmp(argv[i], "--no-autostart"))
      flags |= LINKD_NO_AUTOSTART;
    else if (!strcmp(argv[i], "--no-fallback"))
      flags |= LINKD_NO_FALLBACK;
    else if (!strcmp(argv[i], "--local"))
      flags |= LINKD_LOCAL_ONLY;
    else if (!strcmp(argv[i], "--struct-size"))
      structSize = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fallback-linker"))
      fallbackLinker = argv[++i];
    else if (!strcmp(argv[i], "--timeout"))
      timeoutMs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads"))
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--each"))
      each = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fork"))
      doFork = 1;
    else if (!strcmp(argv[i], "--out"))
      outDir = argv[++i];
    else if (!strcmp(argv[i], "--in"))
      inSpecs[nIn++] = argv[++i];
  }
  args = argv + i + 1;
  nArgs = argc - i - 1;
  if (threads > 1 || each > 1) {
    pthread_t th[256];
    for (int t = 0; t < threads; ++t)
      pthread_create(&th[t], NULL, worker, (void *)(long)t);
    for (int t = 0; t < threads; ++t)
      pthread_join(th[t], NULL);
    return failures ? 1 : 0;
  }
  int rc = linkOne(0, 0);
  if (!doFork)
    return rc;
  pid_t pid = fork();
  if (pid == 0)
    _exit(linkOne(0, 0));
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}
