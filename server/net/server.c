/*
 * server.c - connections and epoll loops (see server.h for the threading).
 *
 * Per connection state machine, level-triggered epoll:
 *   read -> parse/execute every complete request -> write what we can.
 * Replies are appended in request order to one output stream, so deep
 * pipelining (twemproxy funnels many clients into one connection) gets its
 * replies in order. A connection speaks the text protocol (proto/parse.c)
 * or the binary one (proto/binparse.c, exec/binexec.c) for its whole life:
 * -B picks, or with -B auto its first byte does (0x80, the binary magic), as
 * memcached decides; the buffering, swallowing and high-water rules below
 * are the same for both.
 *
 * Memory (invariants; docs/server.md gives the numbers):
 *   SERVER-M1. An idle connection holds no buffer: requests are read into the
 *       worker's 64 KiB read buffer and replies built in the worker's output
 *       buffer; only a partial request or an unsent reply tail is copied into
 *       buffers owned by the connection, which are freed once empty.
 *   SERVER-M2. A connection's input never exceeds max(LARDERD_GET_LINE_MAX, one
 *       line + item_max + 2) + READ_CHUNK: the parser bounds line length and
 *       refuses oversize values before buffering them (a binary request
 *       needs at most its header, extras and key, under 64 KiB, plus a value
 *       that fits the item limit: BINPARSE-B3).
 *   SERVER-M3. Output is bounded by HIGH_WATER plus one reply: above HIGH_WATER the
 *       connection stops reading, and a multiget pauses between keys, until
 *       the client drains it (a slow reader cannot grow memory).
 *
 * Cost (linear in the bytes received, however deep the pipeline):
 *   SERVER-L1. Requests are consumed by advancing an offset; the unconsumed tail is
 *       moved once per read, after every complete request in it has run, so
 *       each received byte is copied or moved at most once (once more if it
 *       waits behind a multiget paused at high water). The stat
 *       input_bytes_moved counts those bytes (and the ones a buffer growth
 *       copies); tests/protocol/robustness.py checks it stays within
 *       bytes_read after a 100,000-request burst sent in one write.
 *   SERVER-L2. A buffer holding one long line (a multiget of up to
 *       LARDERD_GET_LINE_MAX) grows geometrically, not by READ_CHUNK, so
 *       growing it copies O(line) bytes, not O(line^2 / READ_CHUNK).
 *   SERVER-L3. Such a line is searched for its newline once: each read searches
 *       only the bytes it added (conn.no_nl marks where the last search
 *       stopped).
 *
 * Scheduling:
 *   SERVER-S1. Every worker asks for a scheduling slice of WORKER_SLICE_NS
 *       (worker_slice) and keeps its policy and nice value; the kernel may
 *       ignore the request, never the nice value. tests/protocol/slice.py
 *       checks it where the kernel keeps custom slices.
 */
#include "server.h"
#include "../exec/exec_internal.h"
#include "../proto/binparse.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)
#define HIGH_WATER (256 * 1024)
#define MAX_EVENTS 128
/* SERVER-S1: the scheduling slice a worker asks for (worker_slice). */
#define WORKER_SLICE_NS (100u * 1000u)
/* The largest buffer a request line needs (SERVER-M2). */
#define LINE_CAP (LARDERD_GET_LINE_MAX + READ_CHUNK)

enum { KIND_CONN, KIND_LISTEN, KIND_STOP };

/* What an epoll event points at: every such struct starts with its kind. */
struct listener {
	int kind;
	int fd;
};

struct conn {
	int kind; /* KIND_CONN */
	int fd;
	uint32_t events;
	bool suspended; /* req is a paused multiget pointing into in */
	bool closing;   /* close once out is written */
	bool stalled;   /* complete requests wait in `in` because out hit high water */
	bool paused;    /* not read until the client drains out (counted in paused_conns) */
	bool binary;    /* speaks the binary protocol (decided by its first byte, or -B) */
	bool decided;   /* binary is set */
	size_t need;    /* parser: bytes needed before parsing again */
	size_t no_nl;   /* leading bytes of the pending input known to hold no '\n' */
	size_t swallow; /* bytes of an oversize value still to discard */
	char *in;       /* unconsumed input [0, in_len), NULL when empty */
	size_t in_len, in_cap;
	struct larderd_obuf out; /* unsent replies, out.buf NULL when empty */
	size_t sent;
	struct larderd_req req;
	struct conn *prev, *next;
};

struct worker {
	struct larderd_net *net;
	struct larderd_exec x;
	pthread_t thread;
	int ep;
	char *rbuf;
	struct larderd_obuf out; /* replies for connections with nothing pending */
	struct conn *conns;
	int spare_fd; /* held open so an accept at the fd limit can still refuse */
	bool started;
};

struct larderd_net {
	struct larderd_shared *sh;
	struct listener *ls; /* nlfd listeners, then the stop eventfd */
	int nlfd;
	int stop_fd;
	int nworkers;
	struct larderd_limits lim;
	struct worker *w;
};

static void set_interest(struct worker *w, struct conn *c, uint32_t ev)
{
	struct epoll_event e = {.events = ev, .data.ptr = c};
	if (c->events != ev && epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = ev;
}

static void conn_free(struct worker *w, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->suspended)
		larderd_exec_abandon(&c->req);
	close(c->fd);
	free(c->in);
	larderd_obuf_free(&c->out);
	/* Relaxed: statistics; nothing is published through them. */
	if (c->paused)
		atomic_fetch_sub_explicit(&w->net->sh->paused_conns, 1, memory_order_relaxed);
	free(c);
	atomic_fetch_sub_explicit(&w->net->sh->curr_conns, 1, memory_order_relaxed);
}

static void conn_accept(struct worker *w, int lfd)
{
	struct larderd_shared *sh = w->net->sh;

	for (int i = 0; i < 64; i++) {
		int one = 1, fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event e;
		struct conn *c;

		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && w->spare_fd >= 0) {
			/* Out of descriptors: a level-triggered listener would wake us
			 * forever. Free the spare, take the connection and refuse it. */
			close(w->spare_fd);
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				static const char msg[] = "ERROR Too many open connections\r\n";
				larderd_ignore(write(fd, msg, sizeof(msg) - 1));
				close(fd);
				atomic_fetch_add_explicit(&sh->rejected_conns, 1, memory_order_relaxed);
			}
			w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			return;
		}
		if (fd < 0)
			return;
		/* Relaxed: a soft limit, as memcached's; a race admits one extra at most per worker. */
		if (atomic_load_explicit(&sh->curr_conns, memory_order_relaxed) >=
		    (uint64_t)sh->maxconns) {
			static const char msg[] = "ERROR Too many open connections\r\n";
			larderd_ignore(write(fd, msg, sizeof(msg) - 1));
			close(fd);
			atomic_fetch_add_explicit(&sh->rejected_conns, 1, memory_order_relaxed);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			larderd_stat_add(&w->x, WS_MALLOC_FAILS, 1);
			close(fd);
			continue;
		}
		c->kind = KIND_CONN;
		c->fd = fd;
		c->events = EPOLLIN;
		e.events = EPOLLIN;
		e.data.ptr = c;
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &e) != 0) {
			close(fd);
			free(c);
			continue;
		}
		c->next = w->conns;
		if (w->conns)
			w->conns->prev = c;
		w->conns = c;
		atomic_fetch_add_explicit(&sh->curr_conns, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&sh->total_conns, 1, memory_order_relaxed);
	}
}

/* Moves the suspended request's pointers from one copy of the bytes to another. */
static void rebase_req(struct larderd_req *r, const char *from, char *to)
{
	ptrdiff_t d = to - from;
	r->keys += d;
	r->keys_end += d;
	for (int i = 0; i < r->ntok; i++)
		r->tok[i].p += d;
	r->key.p += d;
}

enum { PROC_OK, PROC_CLOSE };

/*
 * One binary request from buf[0, avail): a parse_result; runs it when DONE.
 * *owed is where out's replies memcached would already have sent end: it
 * writes every error reply at once, with all before it (write_bin_error),
 * and the rest when its input runs dry. A bad magic closes the connection
 * after sending those and dropping the replies after them, as memcached's
 * close drops what it had not written.
 */
static int process_binary(struct worker *w, struct conn *c, const char *buf, size_t avail,
			  size_t *off, struct larderd_obuf *out, size_t *owed)
{
	struct larderd_binreq br;
	int pr = larderd_binparse((const unsigned char *)buf, avail, &w->net->lim, &br), r;
	size_t before = out->len;

	if (pr == LARDERD_PARSE_MORE) {
		c->need = br.need;
		return pr;
	}
	c->need = 0;
	if (pr == LARDERD_PARSE_CLOSE) {
		out->len = *owed;
		c->closing = true;
		return LARDERD_PARSE_DONE;
	}
	r = larderd_binexec(&w->x, &br, out);
	/* a reply's status is bytes 6-7 of its header */
	if (out->len >= before + LARDERD_BIN_HDR &&
	    (out->buf[before + 6] != 0 || out->buf[before + 7] != 0))
		*owed = out->len;
	*off += br.consumed;
	c->swallow = br.swallow;
	if (r == LARDERD_EXEC_CLOSE)
		c->closing = true;
	return r == LARDERD_EXEC_DONE || r == LARDERD_EXEC_CLOSE ? LARDERD_PARSE_DONE
								 : LARDERD_PARSE_CLOSE;
}

/*
 * Parses and runs requests from buf[*off, len) into out. Stops at an
 * incomplete request, at high water, when a multiget suspends, or when an
 * oversize value has just been swallowed with input left (*resume: memcached
 * sends the replies held meanwhile before it reads the next request).
 */
static int process(struct worker *w, struct conn *c, const char *buf, size_t len, size_t *off,
		   struct larderd_obuf *out, bool *resume)
{
	struct larderd_exec *x = &w->x;
	/* the replies before this read: memcached has written them by now */
	size_t owed = out->len;

	c->stalled = false;
	*resume = false;
	if (c->suspended) {
		int r = larderd_exec(x, &c->req, out, HIGH_WATER);
		if (r == LARDERD_EXEC_SUSPEND)
			return PROC_OK;
		c->suspended = false;
		*off += c->req.consumed;
		if (r != LARDERD_EXEC_DONE)
			return PROC_CLOSE;
	}
	for (;;) {
		size_t avail = len - *off;
		int pr, r;

		/* An oversize value is swallowed whatever the output holds: its
		 * reply, and everything before it, wait for the swallow's end. */
		if (c->swallow > 0 && avail > 0) {
			size_t n = avail < c->swallow ? avail : c->swallow;
			c->swallow -= n;
			*off += n;
			if (c->swallow == 0 && *off < len) {
				*resume = true;
				break;
			}
			continue;
		}
		if (avail == 0 || out->len - c->sent > HIGH_WATER)
			break;
		if (avail < c->need)
			break;
		if (!c->decided) {
			enum larderd_protocol p = w->net->sh->protocol;
			c->binary = p == LARDERD_PROTO_BINARY ||
				    (p == LARDERD_PROTO_AUTO &&
				     (unsigned char)buf[*off] == LARDERD_BIN_REQ_MAGIC);
			c->decided = true;
		}
		if (c->binary) {
			pr = process_binary(w, c, buf + *off, avail, off, out, &owed);
			if (pr == LARDERD_PARSE_CLOSE)
				return PROC_CLOSE;
			if (pr == LARDERD_PARSE_MORE || c->closing)
				break;
			continue;
		}
		/* SERVER-L3: a line still without its newline is searched from where the
		 * last search stopped, not from its start. */
		if (c->no_nl > 0 && memchr(buf + *off + c->no_nl, '\n', avail - c->no_nl) == NULL) {
			pr = larderd_parse_no_newline(buf + *off, avail);
			c->req.need = 0;
		} else {
			pr = larderd_parse(buf + *off, avail, &w->net->lim, &c->req);
		}
		if (pr == LARDERD_PARSE_MORE) {
			/* need 0: the parser found no newline in these bytes */
			c->need = c->req.need;
			c->no_nl = c->need == 0 ? avail : 0;
			break;
		}
		c->need = 0;
		c->no_nl = 0;
		if (pr == LARDERD_PARSE_CLOSE)
			return PROC_CLOSE;
		r = larderd_exec(x, &c->req, out, HIGH_WATER);
		if (r == LARDERD_EXEC_SUSPEND) {
			c->suspended = true;
			break;
		}
		*off += c->req.consumed;
		c->swallow = c->req.swallow;
		if (r == LARDERD_EXEC_CLOSE) {
			c->closing = true;
			break;
		}
		if (r != LARDERD_EXEC_DONE)
			return PROC_CLOSE;
	}
	/* Stopped at high water with input left: no new bytes may ever come (the
	 * client may be waiting for these replies), so resume on writability. */
	c->stalled = *off < len && !c->suspended && !c->closing && c->swallow == 0 &&
		     out->len - c->sent > HIGH_WATER;
	return out->failed ? PROC_CLOSE : PROC_OK;
}

/* Keeps buf[off, len) as the connection's pending input. */
static bool keep_input(struct worker *w, struct conn *c, const char *buf, size_t off, size_t len,
		       bool from_conn)
{
	size_t rest = len - off;

	if (from_conn) {
		if (rest == 0) {
			free(c->in);
			c->in = NULL;
			c->in_len = c->in_cap = 0;
		} else if (off > 0) {
			memmove(c->in, c->in + off, rest);
			larderd_stat_add(&w->x, WS_INPUT_MOVED, rest);
			if (c->suspended)
				rebase_req(&c->req, buf + off, c->in);
			c->in_len = rest;
		}
		return true;
	}
	if (rest == 0)
		return true;
	c->in_cap = rest > READ_CHUNK ? rest : READ_CHUNK;
	c->in = malloc(c->in_cap);
	if (c->in == NULL) {
		larderd_stat_add(&w->x, WS_MALLOC_FAILS, 1);
		return false;
	}
	memcpy(c->in, buf + off, rest);
	larderd_stat_add(&w->x, WS_INPUT_MOVED, rest);
	c->in_len = rest;
	if (c->suspended)
		rebase_req(&c->req, buf + off, c->in);
	return true;
}

/*
 * Writes pending output; leftovers from the worker buffer move to the
 * connection. While an oversize value is being swallowed nothing is written:
 * memcached sends that request's error, and the replies before it, only
 * once the value has gone by.
 */
static int flush_out(struct worker *w, struct conn *c, struct larderd_obuf *out)
{
	while (c->swallow == 0 && c->sent < out->len) {
		ssize_t n = write(c->fd, out->buf + c->sent, out->len - c->sent);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return PROC_CLOSE;
		}
		larderd_stat_add(&w->x, WS_BYTES_WRITTEN, (uint64_t)n);
		c->sent += (size_t)n;
	}
	if (out == &w->out) {
		if (c->sent < out->len)
			larderd_obuf_add(&c->out, out->buf + c->sent, out->len - c->sent);
		out->len = 0;
		c->sent = 0;
		if (out->cap > (1u << 20)) /* one huge multiget must not pin its buffer */
			larderd_obuf_free(out);
		if (c->out.failed)
			return PROC_CLOSE;
	} else if (c->sent == out->len) {
		larderd_obuf_consume(out, out->len);
		if (out->cap > 0 && out->len == 0)
			larderd_obuf_free(out);
		c->sent = 0;
	}
	return PROC_OK;
}

static bool read_more(struct worker *w, struct conn *c, char **buf, size_t *len, bool *from_conn)
{
	ssize_t n;

	if (c->in == NULL) {
		*buf = w->rbuf;
		*from_conn = false;
		n = read(c->fd, w->rbuf, READ_CHUNK);
		*len = n > 0 ? (size_t)n : 0;
	} else {
		size_t want = c->in_len + READ_CHUNK;
		if (c->need > want)
			want = c->need;
		if (want > c->in_cap) {
			/* SERVER-L2: a line still growing past one chunk doubles its buffer,
			 * within SERVER-M2's bound; a value's exact need is taken as is. */
			size_t grown = 2 * c->in_cap < LINE_CAP ? 2 * c->in_cap : LINE_CAP;
			char *nb;

			if (c->need == 0 && c->in_len >= READ_CHUNK && grown > want)
				want = grown;
			nb = realloc(c->in, want);
			if (nb == NULL) {
				larderd_stat_add(&w->x, WS_MALLOC_FAILS, 1);
				return false;
			}
			larderd_stat_add(&w->x, WS_INPUT_MOVED, c->in_len);
			c->in = nb;
			c->in_cap = want;
		}
		n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
		if (n > 0)
			c->in_len += (size_t)n;
		*buf = c->in;
		*len = c->in_len;
		*from_conn = true;
	}
	/* bytes_read counts what is read, as memcached's: a stats reply then
	 * includes its own line, what follows it in the read, and the bytes of
	 * a refused value being swallowed. */
	if (n > 0)
		larderd_stat_add(&w->x, WS_BYTES_READ, (uint64_t)n);
	if (n == 0) {
		/* The client is done sending (perhaps only half-closed): the
		 * replies already built still go out, then the connection closes,
		 * as memcached, which reads only once its replies are written,
		 * does; a partial request left in the input is dropped. Replies
		 * held behind a value being swallowed never go (memcached sends
		 * them only after the value). */
		if (c->swallow > 0)
			return false;
		c->closing = true;
		return true;
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return false;
	return true;
}

static void conn_event(struct worker *w, struct conn *c, uint32_t ev)
{
	struct larderd_obuf *out = c->out.len > 0 ? &c->out : &w->out;
	char *buf = c->in;
	size_t len = c->in_len, off = 0;
	bool from_conn = true, paused;

	if (ev & (EPOLLERR | EPOLLHUP) && !(ev & EPOLLIN))
		goto close;
	if ((ev & EPOLLOUT) && flush_out(w, c, &c->out) != PROC_OK)
		goto close;
	out = c->out.len > 0 ? &c->out : &w->out;
	if ((ev & EPOLLIN) && !c->suspended && !c->closing && !read_more(w, c, &buf, &len, &from_conn))
		goto close;
	if (!c->closing && (c->suspended || len > 0) &&
	    (out->len - c->sent <= HIGH_WATER || c->swallow > 0)) {
		bool resume = true;
		while (resume) {
			if (process(w, c, buf, len, &off, out, &resume) != PROC_OK)
				goto close;
			if (resume) {
				if (flush_out(w, c, out) != PROC_OK)
					goto close;
				out = c->out.len > 0 ? &c->out : &w->out;
			}
		}
		if (!keep_input(w, c, buf, off, len, from_conn))
			goto close;
	}
	if (flush_out(w, c, out) != PROC_OK)
		goto close;
	if (c->closing && c->out.len == 0)
		goto close;
	paused = c->swallow == 0 && !c->closing &&
		 (c->out.len > HIGH_WATER || c->suspended || c->stalled);
	if (paused != c->paused) {
		/* Relaxed: a gauge for "stats"; nothing is published through it. */
		if (paused)
			atomic_fetch_add_explicit(&w->net->sh->paused_conns, 1, memory_order_relaxed);
		else
			atomic_fetch_sub_explicit(&w->net->sh->paused_conns, 1, memory_order_relaxed);
		c->paused = paused;
	}
	if (c->swallow > 0)
		set_interest(w, c, EPOLLIN); /* output held until the value is gone */
	else if (paused || c->closing)
		set_interest(w, c, EPOLLOUT);
	else
		set_interest(w, c, EPOLLIN | (c->out.len > 0 ? EPOLLOUT : 0));
	return;
close:
	/* A reply that could not be buffered (sticky failed flag) closes the
	 * connection: counted as memcached's malloc_fails. */
	if (w->out.failed || c->out.failed)
		larderd_stat_add(&w->x, WS_MALLOC_FAILS, 1);
	/* replies built for this connection must not leak into the next one's */
	w->out.len = 0;
	w->out.failed = false;
	conn_free(w, c);
}

/* The kernel's struct sched_attr, first version (48 bytes; <linux/sched/types.h>
 * cannot be included beside <sched.h>, which defines struct sched_param too). */
struct sched_attr_v0 {
	uint32_t size;
	uint32_t policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime;
	uint64_t deadline;
	uint64_t period;
};
_Static_assert(sizeof(struct sched_attr_v0) == 48, "SCHED_ATTR_SIZE_VER0");

/*
 * SERVER-S1: a worker asks for a short scheduling slice. On a busy machine a
 * worker woken by a request waits for a CPU behind threads that run their
 * whole slice (1.4 ms on the 2-core benchmark machine); Linux's EEVDF
 * scheduler (custom slices since 6.12) gives a thread that asks for a shorter
 * slice an earlier deadline, so the woken worker runs sooner. Its share of
 * the CPU (its weight, from the nice value) is unchanged: a worker runs for a
 * few microseconds per request and then sleeps again. Policy and nice value
 * are read back and kept; older kernels ignore the field, and a refusal (a
 * seccomp filter, another scheduling policy) leaves the default: only the
 * latency differs.
 */
static void worker_slice(void)
{
	struct sched_attr_v0 a = {0};

	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0 || a.policy != SCHED_OTHER)
		return;
	a.size = sizeof(a);
	a.runtime = WORKER_SLICE_NS;
	larderd_ignore(syscall(SYS_sched_setattr, 0, &a, 0));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[MAX_EVENTS];

	worker_slice();
	for (;;) {
		int n = epoll_wait(w->ep, ev, MAX_EVENTS, -1);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			int kind = *(int *)ev[i].data.ptr;
			if (kind == KIND_STOP)
				return NULL;
			if (kind == KIND_LISTEN)
				conn_accept(w, ((struct listener *)ev[i].data.ptr)->fd);
			else
				conn_event(w, ev[i].data.ptr, ev[i].events);
		}
	}
	return NULL;
}

static int worker_init(struct larderd_net *net, struct worker *w, unsigned id)
{
	w->net = net;
	w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->rbuf = malloc(READ_CHUNK);
	if (w->ep < 0 || w->rbuf == NULL || larderd_exec_init(&w->x, net->sh, id) != 0)
		return -1;
	for (int i = 0; i <= net->nlfd; i++) {
		/* EPOLLEXCLUSIVE: one worker wakes per connection; the stop fd wakes all. */
		struct epoll_event e = {.events = EPOLLIN | (i < net->nlfd ? EPOLLEXCLUSIVE : 0),
					.data.ptr = &net->ls[i]};
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, net->ls[i].fd, &e) != 0)
			return -1;
	}
	return 0;
}

static void worker_fini(struct worker *w)
{
	while (w->conns)
		conn_free(w, w->conns);
	if (w->ep >= 0)
		close(w->ep);
	if (w->spare_fd >= 0)
		close(w->spare_fd);
	free(w->rbuf);
	larderd_obuf_free(&w->out);
	larderd_exec_fini(&w->x);
}

struct larderd_net *larderd_net_start(struct larderd_shared *sh, const int *lfds, int nlfd)
{
	struct larderd_net *net = calloc(1, sizeof(*net));
	int i;

	if (net == NULL)
		return NULL;
	net->sh = sh;
	net->lim.item_max = sh->item_max;
	net->lim.flush_disabled = sh->flush_disabled;
	net->nlfd = nlfd;
	net->stop_fd = -1;
	net->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	net->ls = calloc((size_t)nlfd + 1, sizeof(*net->ls));
	net->w = calloc((size_t)sh->threads, sizeof(*net->w));
	sh->workers = calloc((size_t)sh->threads, sizeof(*sh->workers));
	if (net->stop_fd < 0 || net->ls == NULL || net->w == NULL || sh->workers == NULL)
		goto fail;
	for (i = 0; i < sh->threads; i++)
		net->w[i].ep = net->w[i].spare_fd = -1;
	for (i = 0; i < nlfd; i++)
		net->ls[i] = (struct listener){KIND_LISTEN, lfds[i]};
	net->ls[nlfd] = (struct listener){KIND_STOP, net->stop_fd};
	for (i = 0; i < sh->threads; i++) {
		sh->workers[i] = &net->w[i].x;
		if (worker_init(net, &net->w[i], (unsigned)i) != 0)
			goto fail;
	}
	for (i = 0; i < sh->threads; i++) {
		if (pthread_create(&net->w[i].thread, NULL, worker_main, &net->w[i]) != 0)
			goto fail;
		/* A name for top -H and server/bench/threads.py; failure is harmless. */
		pthread_setname_np(net->w[i].thread, "larderd-worker");
		net->w[i].started = true;
		net->nworkers = i + 1;
	}
	return net;
fail:
	larderd_net_stop(net);
	return NULL;
}

void larderd_net_stop(struct larderd_net *net)
{
	uint64_t one = 1;

	if (net == NULL)
		return;
	if (net->stop_fd >= 0)
		larderd_ignore(write(net->stop_fd, &one, sizeof(one)));
	for (int i = 0; i < net->nworkers; i++)
		pthread_join(net->w[i].thread, NULL);
	for (int i = 0; net->w && i < net->sh->threads; i++)
		worker_fini(&net->w[i]);
	if (net->stop_fd >= 0)
		close(net->stop_fd);
	free(net->w);
	free(net->ls);
	free(net->sh->workers);
	net->sh->workers = NULL;
	free(net);
}
