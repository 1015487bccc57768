// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

/* bench/kernels.sh's library driver: links N in-memory AMDGPU objects
 * through liblinkd on T threads and prints "seconds hits local failures".
 *
 *   kernels_lib DIR N THREADS NOCACHE [OUTDIR]
 * DIR/k<i>.o are the inputs (read before the clock starts); each is linked
 * as `-shared k.o -o k.hsaco` (Triton's command line, one name for all:
 * the content differs). With OUTDIR, k<i>.hsaco is written there. */
#include <linkd/linkd.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int n, threads, nocache;
static const char *outDir;
static void **data;
static size_t *sizes;
static int next, hits, local, failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
  (void)arg;
  const char *argv[] = {"-shared", "k.o", "-o", "k.hsaco"};
  for (;;) {
    pthread_mutex_lock(&mu);
    int i = next++;
    pthread_mutex_unlock(&mu);
    if (i >= n)
      return NULL;
    linkd_input in = {"k.o", data[i], sizes[i]};
    linkd_options opt = LINKD_OPTIONS_INIT;
    opt.tool = "ld.lld";
    opt.flags = nocache ? LINKD_NO_CACHE : 0;
    linkd_result *r = linkd_link(argv, 4, &in, 1, &opt);
    const linkd_output *o = r ? linkd_result_output(r, "k.hsaco") : NULL;
    pthread_mutex_lock(&mu);
    if (!r || r->exit_code != 0 || !o)
      ++failures;
    else {
      hits += r->cache_hit;
      local += r->ran_locally;
    }
    pthread_mutex_unlock(&mu);
    if (o && outDir) {
      char p[4096];
      snprintf(p, sizeof p, "%s/k%d.hsaco", outDir, i);
      FILE *f = fopen(p, "wb");
      fwrite(o->data, 1, o->size, f);
      fclose(f);
    }
    linkd_result_free(r);
  }
}

int main(int argc, char **argv) {
  if (argc < 5)
    return 2;
  n = atoi(argv[2]);
  threads = atoi(argv[3]);
  nocache = atoi(argv[4]);
  outDir = argc > 5 ? argv[5] : NULL;
  data = calloc(n, sizeof *data);
  sizes = calloc(n, sizeof *sizes);
  for (int i = 0; i < n; ++i) {
    char p[4096];
    snprintf(p, sizeof p, "%s/k%d.o", argv[1], i);
    FILE *f = fopen(p, "rb");
    if (!f)
      return 2;
    fseek(f, 0, SEEK_END);
    sizes[i] = ftell(f);
    fseek(f, 0, SEEK_SET);
    data[i] = malloc(sizes[i]);
    if (fread(data[i], 1, sizes[i], f) != sizes[i])
      return 2;
    fclose(f);
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pthread_t th[64];
  for (int t = 0; t < threads; ++t)
    pthread_create(&th[t], NULL, worker, NULL);
  for (int t = 0; t < threads; ++t)
    pthread_join(th[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.6f %d %d %d\n",
         (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9, hits, local,
         failures);
  return failures ? 1 : 0;
}
