/*
 * loadgen.c - a small memcached load generator for comparing larderd with
 * memcached under the same load (server/bench/run.sh): the text protocol, or
 * with -B the binary one (GET and SET frames, each answered by one frame).
 *
 * Each of T threads owns C/T blocking connections and runs rounds: send
 * `depth` requests on each of its connections, then read every reply. A
 * request's latency is the time from its round's first send to its own reply,
 * so with depth > 1 it includes the queueing inside the pipeline, as a client
 * would see it. Keys are "key:%08u" over a keyspace that is fully written
 * before timing starts; values are `vsize` bytes. Get ratio r: each request
 * is a get with probability r (per-thread xorshift), else a set. With -A
 * (alternate), requests come in pairs on one random key: a set, then a get
 * of what was just set (the set-then-get round trips of a cache-aside
 * client; with -d 1 each is its own round trip).
 *
 * Paired (-P PORT2, for server/bench/run.sh --loaded): one thread holds C
 * connections to each of two servers and drives them in turn, in slots of
 * -i milliseconds (default 100) in the order A B B A A B B A ..., so that
 * both servers meet the same machine: on a shared machine the background
 * changes within seconds, and two cells measured one after the other meet
 * different backgrounds. Each server's rate counts only its own slots.
 * -n skips writing the keys first (for -A, whose gets read the key just set;
 * the writes would leave work for a server's background threads to do
 * inside the timed window).
 *
 * Output: one line, "ops_per_s=... p50_us=... p99_us=... p999_us=... errors=...";
 * paired, one such line per server, -p's first.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HBUCKETS 4096 /* latency histogram: 1 us buckets up to 4 ms, then log */

struct opts {
	const char *host;
	int port, conns, threads, depth, seconds, vsize;
	unsigned keys;
	double get_ratio;
	int alternate;
	int binary;
	int port2; /* paired mode's second server, 0: not paired */
	int slot_ms;
	int no_preload;
};

/* Per server: one, or two when paired. */
struct th {
	struct opts *o;
	int first_conn, nconn;
	uint64_t ops[2], errors, ns[2];
	uint64_t hist[2][HBUCKETS + 64];
	pthread_t t;
};

/* Set by main after the run time, polled by workers once a round. Relaxed: it
 * only ends the loop; results are read after pthread_join, which synchronises. */
static atomic_int g_stop;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bucket_of(uint64_t us)
{
	int b = 0;
	if (us < HBUCKETS)
		return (int)us;
	while ((us >> b) >= HBUCKETS)
		b++;
	return HBUCKETS + b;
}

static uint64_t bucket_us(int b)
{
	return b < HBUCKETS ? (uint64_t)b : (uint64_t)HBUCKETS << (b - HBUCKETS);
}

static int dial(const struct opts *o, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, o->host, &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

struct rd {
	int fd;
	char *buf;
	size_t len, off, cap;
};

/* Ensures n unread bytes are buffered. */
static int need(struct rd *r, size_t n)
{
	while (r->len - r->off < n) {
		ssize_t k;
		if (r->off > 0) {
			memmove(r->buf, r->buf + r->off, r->len - r->off);
			r->len -= r->off;
			r->off = 0;
		}
		if (r->cap - r->len < 65536) {
			r->cap = r->cap * 2 + 65536;
			r->buf = realloc(r->buf, r->cap);
		}
		k = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (k <= 0)
			return -1;
		r->len += (size_t)k;
	}
	return 0;
}

/* Reads one line; returns its length (without \r\n) or -1. */
static long line(struct rd *r, char **out)
{
	for (size_t scan = 0;;) {
		/* buf is NULL before the first read */
		char *nl = r->len - r->off > scan ? memchr(r->buf + r->off + scan, '\n',
							  r->len - r->off - scan) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - (r->buf + r->off));
			*out = r->buf + r->off;
			r->off += n + 1;
			return (long)n - 1;
		}
		scan = r->len - r->off;
		if (need(r, scan + 1) != 0)
			return -1;
	}
}

/* One binary response frame; returns 0 for status 0 (a hit, STORED). */
static int reply_binary(struct rd *r)
{
	const unsigned char *h;
	uint32_t body;
	int status;

	if (need(r, 24) != 0)
		return -1;
	h = (const unsigned char *)r->buf + r->off;
	body = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
	status = h[6] << 8 | h[7];
	if (need(r, 24 + (size_t)body) != 0)
		return -1;
	r->off += 24 + (size_t)body;
	return status == 0 ? 0 : 1;
}

/* One reply; returns 0 if it is the expected kind. */
static int reply(struct rd *r, const struct opts *o, int is_get)
{
	char *l;
	long n;

	if (o->binary)
		return reply_binary(r);
	n = line(r, &l);
	if (n < 0)
		return -1;
	if (!is_get)
		return n == 6 && memcmp(l, "STORED", 6) == 0 ? 0 : 1;
	if (n >= 6 && memcmp(l, "VALUE ", 6) == 0) {
		char *sp = memrchr(l, ' ', (size_t)n);
		size_t bytes = strtoul(sp + 1, NULL, 10);
		if (need(r, bytes + 2) != 0)
			return -1;
		r->off += bytes + 2;
		n = line(r, &l);
	}
	return n == 3 && memcmp(l, "END", 3) == 0 ? 0 : 1;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A binary GET or SET (flags 0, exptime 0) of key:%08u. */
static size_t make_binary(char *p, const struct opts *o, const char *val, unsigned k, int is_get)
{
	unsigned char *h = (unsigned char *)p;
	uint32_t extlen = is_get ? 0 : 8, body = extlen + 12 + (is_get ? 0 : (uint32_t)o->vsize);
	char key[16];

	memset(h, 0, 24 + extlen);
	h[0] = 0x80;
	h[1] = is_get ? 0x00 : 0x01;
	h[3] = 12;
	h[4] = (unsigned char)extlen;
	h[8] = (unsigned char)(body >> 24);
	h[9] = (unsigned char)(body >> 16);
	h[10] = (unsigned char)(body >> 8);
	h[11] = (unsigned char)body;
	/* 12 bytes, as the text protocol's keys for the -k of 10^8 or fewer keys */
	snprintf(key, sizeof(key), "key:%08u", k % 100000000u);
	memcpy(p + 24 + extlen, key, 12);
	if (!is_get)
		memcpy(p + 24 + extlen + 12, val, (size_t)o->vsize);
	return 24 + body;
}

static size_t make_req(char *p, const struct opts *o, const char *val, unsigned k, int is_get)
{
	if (o->binary)
		return make_binary(p, o, val, k, is_get);
	if (is_get)
		return (size_t)sprintf(p, "get key:%08u\r\n", k);
	size_t n = (size_t)sprintf(p, "set key:%08u 0 0 %d\r\n", k, o->vsize);
	memcpy(p + n, val, (size_t)o->vsize);
	memcpy(p + n + o->vsize, "\r\n", 2);
	return n + (size_t)o->vsize + 2;
}

/* Paired mode's slot order A B B A A B B A ...: drift over time lands on both. */
static int slot_server(uint64_t slot)
{
	return (int)((slot ^ (slot >> 1)) & 1);
}

static void *run(void *arg)
{
	struct th *t = arg;
	struct opts *o = t->o;
	int nsrv = o->port2 ? 2 : 1;
	struct rd *rds = calloc((size_t)(nsrv * t->nconn), sizeof(*rds));
	int *kinds = malloc(sizeof(int) * (size_t)o->depth * (size_t)t->nconn);
	char *out = malloc((size_t)o->depth * ((size_t)o->vsize + 64));
	char *val = malloc((size_t)o->vsize);
	uint64_t seed = 88172645463325252ull ^ ((uint64_t)t->first_conn * 0x9e3779b97f4a7c15ull);
	uint64_t slot = 0, slot_ns = (uint64_t)o->slot_ms * 1000000u, slot_t0 = now_ns();
	unsigned key = 0;
	uint64_t sent = 0;

	memset(val, 'v', (size_t)o->vsize);
	for (int c = 0; c < nsrv * t->nconn; c++)
		rds[c].fd = dial(o, c < t->nconn ? o->port : o->port2);
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		int srv = nsrv == 2 ? slot_server(slot) : 0;
		struct rd *rd = rds + srv * t->nconn;
		uint64_t t0 = now_ns(), t1;
		for (int c = 0; c < t->nconn; c++) {
			size_t len = 0;
			for (int d = 0; d < o->depth; d++) {
				int g;
				if (o->alternate) {
					g = (int)(sent++ & 1); /* set, then get */
					if (!g)
						key = (unsigned)(xorshift(&seed) % o->keys);
				} else {
					g = (double)(xorshift(&seed) % 1000000) < o->get_ratio * 1e6;
					key = (unsigned)(xorshift(&seed) % o->keys);
				}
				kinds[c * o->depth + d] = g;
				len += make_req(out + len, o, val, key, g);
			}
			if (write(rd[c].fd, out, len) != (ssize_t)len) {
				t->errors++;
				goto done;
			}
		}
		for (int c = 0; c < t->nconn; c++)
			for (int d = 0; d < o->depth; d++) {
				int rc = reply(&rd[c], o, kinds[c * o->depth + d]);
				if (rc < 0) {
					t->errors++;
					goto done;
				}
				t->errors += (uint64_t)rc;
				t->ops[srv]++;
				t->hist[srv][bucket_of((now_ns() - t0) / 1000)]++;
			}
		t1 = now_ns();
		if (nsrv == 2 && t1 - slot_t0 >= slot_ns) {
			t->ns[srv] += t1 - slot_t0;
			slot_t0 = t1;
			slot++;
		}
	}
	t->ns[nsrv == 2 ? slot_server(slot) : 0] += now_ns() - slot_t0;
done:
	for (int c = 0; c < nsrv * t->nconn; c++) {
		close(rds[c].fd);
		free(rds[c].buf);
	}
	free(rds);
	free(kinds);
	free(out);
	free(val);
	return NULL;
}

static void preload(struct opts *o, int port)
{
	int fd = dial(o, port);
	struct rd r = {.fd = fd};
	char *out = malloc(1000 * ((size_t)o->vsize + 64)), *val = malloc((size_t)o->vsize);
	memset(val, 'v', (size_t)o->vsize);
	for (unsigned k = 0; k < o->keys; k += 1000) {
		size_t len = 0;
		unsigned n = o->keys - k < 1000 ? o->keys - k : 1000;
		for (unsigned i = 0; i < n; i++)
			len += make_req(out + len, o, val, k + i, 0);
		if (write(fd, out, len) != (ssize_t)len)
			exit(1);
		for (unsigned i = 0; i < n; i++)
			if (reply(&r, o, 0) != 0) {
				fprintf(stderr, "preload failed\n");
				exit(1);
			}
	}
	close(fd);
	free(out);
	free(val);
	free(r.buf);
}

static uint64_t pct(const uint64_t *h, uint64_t total, double p)
{
	uint64_t want = (uint64_t)(total * p), seen = 0;
	for (int b = 0; b < HBUCKETS + 64; b++) {
		seen += h[b];
		if (seen > want)
			return bucket_us(b);
	}
	return 0;
}

/* One server's line: its requests over the time spent on it. */
static void report(const uint64_t *h, uint64_t ops, uint64_t ns, uint64_t errors)
{
	printf("ops_per_s=%.0f p50_us=%llu p99_us=%llu p999_us=%llu errors=%llu\n",
	       ns ? ops / ((double)ns / 1e9) : 0.0, (unsigned long long)pct(h, ops, 0.5),
	       (unsigned long long)pct(h, ops, 0.99), (unsigned long long)pct(h, ops, 0.999),
	       (unsigned long long)errors);
}

int main(int argc, char **argv)
{
	struct opts o = {"127.0.0.1", 11211, 8, 1, 1, 3, 64, 24000, 0.9, 0, 0, 0, 100, 0};
	int ch, nsrv;
	while ((ch = getopt(argc, argv, "h:p:c:T:d:s:v:k:r:ABP:i:n")) != -1) {
		switch (ch) {
		case 'h': o.host = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'c': o.conns = atoi(optarg); break;
		case 'T': o.threads = atoi(optarg); break;
		case 'd': o.depth = atoi(optarg); break;
		case 's': o.seconds = atoi(optarg); break;
		case 'v': o.vsize = atoi(optarg); break;
		case 'k': o.keys = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'r': o.get_ratio = atof(optarg); break;
		case 'A': o.alternate = 1; break;
		case 'B': o.binary = 1; break;
		case 'P': o.port2 = atoi(optarg); break;
		case 'i': o.slot_ms = atoi(optarg); break;
		case 'n': o.no_preload = 1; break;
		default:
			fprintf(stderr, "usage: loadgen [-h host] [-p port] [-c conns] [-T threads] "
					"[-d depth] [-s secs] [-v vsize] [-k keys] [-r get_ratio] [-A] [-B] "
					"[-P port2 [-i slot_ms]] [-n]\n");
			return 2;
		}
	}
	if (o.threads > o.conns)
		o.threads = o.conns;
	if (o.port2) {
		if (o.slot_ms <= 0) {
			fprintf(stderr, "loadgen: -i needs a positive slot length\n");
			return 2;
		}
		o.threads = 1; /* one thread takes turns between the servers */
	}
	nsrv = o.port2 ? 2 : 1;
	if (!o.no_preload) {
		preload(&o, o.port);
		if (o.port2)
			preload(&o, o.port2);
	}
	struct th *ts = calloc((size_t)o.threads, sizeof(*ts));
	uint64_t t0 = now_ns();
	for (int i = 0, c = 0; i < o.threads; i++) {
		ts[i].o = &o;
		ts[i].first_conn = c;
		ts[i].nconn = o.conns / o.threads + (i < o.conns % o.threads);
		c += ts[i].nconn;
		pthread_create(&ts[i].t, NULL, run, &ts[i]);
	}
	usleep((useconds_t)o.seconds * 1000000u);
	atomic_store_explicit(&g_stop, 1, memory_order_relaxed);
	uint64_t ops[2] = {0, 0}, errors = 0, *h = calloc(2 * (HBUCKETS + 64), sizeof(uint64_t));
	uint64_t ns[2] = {0, 0};
	for (int i = 0; i < o.threads; i++) {
		pthread_join(ts[i].t, NULL);
		errors += ts[i].errors;
		for (int s = 0; s < nsrv; s++) {
			ops[s] += ts[i].ops[s];
			ns[s] = ts[i].ns[s];
			for (int b = 0; b < HBUCKETS + 64; b++)
				h[s * (HBUCKETS + 64) + b] += ts[i].hist[s][b];
		}
	}
	if (!o.port2)
		ns[0] = now_ns() - t0; /* threads run side by side: the wall time */
	for (int s = 0; s < nsrv; s++)
		report(h + s * (HBUCKETS + 64), ops[s], ns[s], errors);
	free(h);
	free(ts);
	return errors ? 1 : 0;
}
