// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A transport reference for bench/run.sh's remote section: fetch one string
// value from a Redis server on a Unix socket and write it to OUT (/dev/null
// for the fetch alone), with nothing else on the way (no hashing, no
// allocation per reply).
//
//   redis_fetch SOCK KEY OUT PIECE [SKIP]
//
// PIECE 0: one GET of the whole value; PIECE > 0: GETRANGE pieces of PIECE
// bytes, two in flight (what linkd does). SKIP leading bytes of the value
// are not written (linkd's one format byte). Prints the bytes written;
// exits 1 on any error.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char buf[1 << 20];
static size_t pos, end;
static int sock;

static void die(const char *what) {
  fprintf(stderr, "redis_fetch: %s\n", what);
  exit(1);
}

static void fill(void) {
  ssize_t n = read(sock, buf + end, sizeof buf - end);
  if (n <= 0)
    die("connection lost");
  end += (size_t)n;
}

static void sendAll(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(sock, p, n);
    if (w <= 0)
      die("write failed");
    p += w;
    n -= (size_t)w;
  }
}

static void command(const char *verb, const char *key, long long a,
                    long long b) {
  char cmd[512], x[32], y[32];
  int n;
  if (a < 0) {
    n = snprintf(cmd, sizeof cmd, "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                 strlen(verb), verb, strlen(key), key);
  } else {
    int lx = snprintf(x, sizeof x, "%lld", a);
    int ly = snprintf(y, sizeof y, "%lld", b);
    n = snprintf(cmd, sizeof cmd,
                 "*4\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n",
                 strlen(verb), verb, strlen(key), key, lx, x, ly, y);
  }
  if (n <= 0 || (size_t)n >= sizeof cmd)
    die("key too long");
  sendAll(cmd, (size_t)n);
}

// One reply line ("$123", ":45"), without its CRLF.
static long long header(char kind) {
  char line[64];
  size_t k = 0;
  for (;;) {
    while (pos < end) {
      char ch = buf[pos++];
      if (ch == '\n' && k > 0 && line[k - 1] == '\r') {
        line[k - 1] = 0;
        if (line[0] != kind)
          die(line);
        return atoll(line + 1);
      }
      if (k < sizeof line - 1)
        line[k++] = ch;
    }
    pos = end = 0;
    fill();
  }
}

// The body of a bulk string and its CRLF; the first `skip` bytes not written.
static void body(long long len, int out, long long *skip) {
  long long left = len;
  while (left > 0) {
    if (pos == end) {
      pos = end = 0;
      size_t want = left < (long long)sizeof buf ? (size_t)left : sizeof buf;
      while (end < want)
        fill();
    }
    size_t n = end - pos < (size_t)left ? end - pos : (size_t)left;
    size_t s = *skip < (long long)n ? (size_t)*skip : n;
    *skip -= (long long)s;
    if (n > s && write(out, buf + pos + s, n - s) != (ssize_t)(n - s))
      die("cannot write the output");
    pos += n;
    left -= (long long)n;
  }
  while (end - pos < 2) {
    if (pos == end)
      pos = end = 0;
    fill();
  }
  pos += 2;
}

int main(int argc, char **argv) {
  if (argc < 5 || argc > 6)
    die("usage: redis_fetch SOCK KEY OUT PIECE [SKIP]");
  const char *key = argv[2];
  long long piece = atoll(argv[4]), skip = argc > 5 ? atoll(argv[5]) : 0;
  long long written0 = skip;
  int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0)
    die("cannot open the output");
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(argv[1]) >= sizeof a.sun_path)
    die("socket path too long");
  strcpy(a.sun_path, argv[1]);
  sock = socket(AF_UNIX, SOCK_STREAM, 0);
  if (sock < 0 || connect(sock, (struct sockaddr *)&a, sizeof a) != 0)
    die("cannot connect");
  long long total;
  if (piece <= 0) {
    command("GET", key, -1, -1);
    total = header('$');
    if (total < 0)
      die("no such key");
    body(total, out, &skip);
  } else {
    command("STRLEN", key, -1, -1);
    total = header(':');
    if (total <= 0)
      die("no such key");
    long long next = 0, received = 0;
    for (int i = 0; i < 2 && next < total; ++i, next += piece)
      command("GETRANGE", key, next, next + piece - 1);
    while (received < total) {
      long long len = header('$');
      if (len <= 0)
        die("short value");
      body(len, out, &skip);
      received += len;
      if (next < total) {
        command("GETRANGE", key, next, next + piece - 1);
        next += piece;
      }
    }
  }
  printf("%lld\n", total - written0);
  return close(out) == 0 ? 0 : 1;
}
