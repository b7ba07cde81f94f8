/*
 * main.c - larderd: command line, listening sockets, signals, and the
 * process lifetime (open the cache, start the workers, wait for SIGTERM or
 * SIGINT, stop the workers, close the cache).
 *
 * The main thread does no request work: it waits for a signal with a
 * one-second timeout and runs a delayed "flush_all <delay>" when it is due.
 * SIGTERM, SIGINT and SIGUSR1 are blocked in every thread (the mask is
 * inherited) and taken only here with sigtimedwait(), so shutdown runs in
 * normal context.
 *
 * Warm restart (-e/--snapshot-file, docs/persistence.md): start-up loads the
 * file before the workers start (a missing file starts empty; a damaged one
 * is reported and the cache starts empty); a graceful shutdown (SIGTERM, or
 * SIGUSR1 as memcached's graceful stop) stops the workers first, so no
 * request changes the cache meanwhile, then saves, then closes. SIGINT
 * (an operator's ^C) stops without saving. The "shutdown" command (-A)
 * sends the process SIGINT, "shutdown graceful" SIGUSR1.
 *
 * memcached's command line is accepted whole (docs/server.md, "Build
 * and run"): what larderd does the same way works; tuning of memcached's own
 * internals (slab factor, LRU, ...) is accepted and has no effect (-o's
 * suboptions and memcached's checks of their values: suboptions.c); what
 * larderd cannot do (SASL, TLS, no-eviction, no CAS) is refused with a
 * message, never ignored. Start-up order: listen (errors reach the
 * terminal), write memcached's ports file when its variable names one,
 * lock memory, drop privileges (-u), daemonize (-d), write the
 * pid file (-P), then open the cache, since the engine's threads would not
 * survive the fork.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "larder.h"
#include "exec/exec_internal.h"
#include "net/server.h"
#include "suboptions.h"

/* The -l list, memcached's way: several -l joined with commas. */
#define INTER_MAX 1024
/* Listening sockets at most (every address of every -l entry). */
#define LISTEN_MAX 32
/* -p's value for a port the kernel picks (bind to 0), as memcached's. */
#define EPHEMERAL_PORT "-1"
/* memcached's environment variable naming the file that start-up writes
 * the TCP ports it listens on to (its test suite's way to run servers on
 * ports the kernel picked). */
#define PORTS_FILE_ENV "MEMCACHED_PORT_FILENAME"

struct options {
	const char *port;
	const char *inter; /* NULL (every address) or inter_buf */
	char inter_buf[INTER_MAX];
	const char *socket_path;
	uint64_t mem_mib;
	int threads;
	int maxconns;
	int verbose;
	size_t item_max;
	const char *snapshot;
	enum larderd_protocol protocol;
	size_t compress_min;          /* 0: off */
	unsigned compress_saving_pct;
	enum larder_dictionary dict_mode;
	const char *dict_path;        /* LARDER_DICTIONARY_GIVEN: the file */
	bool dict_set;                /* --compress-dict was given */
	unsigned shards;              /* --shards: larder_config_set_shards */
	/* memcached's process options */
	bool daemonize;               /* -d */
	const char *pidfile;          /* -P */
	const char *user;             /* -u: the identity to assume when started as root */
	mode_t unix_mask;             /* -a: the UNIX socket's access mask */
	int backlog;                  /* -b */
	bool coredumps;               /* -r */
	bool lock_memory;             /* -k */
	bool shutdown_enabled;        /* -A */
	bool flush_disabled;          /* -F */
	bool dump_disabled;           /* -X */
	char prefix_delimiter;        /* -D: stats detail's key prefix delimiter */
	bool detail;                  /* -D also turns stats detail on, as memcached's */
	struct larderd_subopts subopts; /* -o, memcached's checks across them */
};

/* Long-only options (memcached has no letter for them). */
enum { OPT_COMPRESS_MIN = 256, OPT_COMPRESS_SAVING, OPT_COMPRESS_DICT, OPT_SHARDS };
#define DEFAULT_COMPRESS_SAVING_PCT 10u
#define DEFAULT_UNIX_MASK 0700
#define DEFAULT_BACKLOG 1024

static void usage(FILE *f)
{
	fprintf(f,
		"larderd " LARDERD_VERSION_STR " - a memcached-protocol server on the larder engine\n"
		"-p, --port=<num>          TCP port to listen on (default: 11211)\n"
		"-l, --listen=<addr>       interfaces to listen on, a list as memcached's\n"
		"                          (default: all addresses)\n"
		"-s, --unix-socket=<file>  UNIX socket to listen on (disables network support)\n"
		"-m, --memory-limit=<num>  item memory in megabytes (default: 64)\n"
		"-t, --threads=<num>       number of worker threads to use (default: 4)\n"
		"-c, --conn-limit=<num>    max simultaneous connections (default: 1024)\n"
		"-I, --max-item-size=<num> max value size, with k/m suffix (default: 1m)\n"
		"-B, --protocol=<name>     protocol - one of ascii, binary, or auto (default:\n"
		"                          auto-negotiate, from each connection's first byte)\n"
		"-e, --snapshot-file=<file> load the cache from <file> at start-up, save it there\n"
		"                          on SIGTERM or SIGUSR1 (graceful shutdown)\n"
		"    --compress-min=<num>  store items of at least <num> bytes (k/m suffix)\n"
		"                          compressed: zstd against a dictionary trained from\n"
		"                          the first items, LZ4 until then (default: 0, off)\n"
		"    --compress-saving=<pct> keep an item compressed only when that saves\n"
		"                          at least <pct>%% (0-99, default: 10); else raw\n"
		"    --compress-dict=<mode> the dictionary zstd compresses against, with\n"
		"                          --compress-min: 'train' one from the first items\n"
		"                          (default), 'none' (LZ4 alone, each item by itself),\n"
		"                          or 'file:<path>': a zstd dictionary (zstd --train)\n"
		"                          or raw sample content, 1 byte to 1 MiB, used from\n"
		"                          the first item\n"
		"    --shards=<num>        split the cache by key hash into <num> shards, each\n"
		"                          with its own maintainer thread (a power of two,\n"
		"                          1-64; default: 1): writes from many cores no\n"
		"                          longer wait on one maintainer\n"
		"-v, --verbose             verbose (print errors/warnings while in event loop)\n"
		"-a, --unix-mask=<mask>    access mask for the UNIX socket, in octal (default: 700)\n"
		"-A, --enable-shutdown     enable the ascii \"shutdown\" command\n"
		"-d, --daemon              run as a daemon\n"
		"-P, --pidfile=<file>      save the PID in <file> (removed at exit with -d)\n"
		"-u, --user=<user>         assume the identity of <user> (only when run as root)\n"
		"-r, --enable-coredumps    maximize the core file limit\n"
		"-k, --lock-memory         lock down all paged memory\n"
		"-b, --listen-backlog=<num> the backlog queue limit (default: 1024)\n"
		"-F, --disable-flush-all   disable the flush_all command\n"
		"-X, --disable-dumping     disable lru_crawler metadump and stats cachedump\n"
		"-U, --udp-port=<num>      accepted; UDP is not served (0, memcached's default)\n"
		"-D <char>                 the key prefix delimiter of \"stats detail\" (default: :);\n"
		"                          turns it on, as memcached's -D\n"
		"-f -n -L -R -W -N -o      memcached's tuning of its own slabs, LRU and threads:\n"
		"                          accepted, no effect (the engine has its own);\n"
		"                          -o idle_timeout=N (N > 0) and -o ext_path: refused\n"
		"-M -C -S -Y -Z            no-eviction, no-CAS, SASL, auth file, TLS: refused\n"
		"-i, --license             print the licence and exit\n"
		"-V, --version             print version and exit\n"
		"-h, --help                print this help and exit\n");
}

/* memcached's -I bounds (its ITEM_SIZE_MAX_LOWER_LIMIT and _UPPER_LIMIT). */
#define ITEM_MIN 1024ull
#define ITEM_UPPER (1024ull * 1024 * 1024)

/* -I: a byte count with a k/m suffix, from 1 KiB to the engine's value
 * limit less the item header (just under 1 GiB). A value memcached reads
 * as under 1 KiB (not a number, or a suffix it does not know: its atoi
 * stops there) or over 1 GiB is refused in memcached's words; anything
 * else larderd cannot take in its own. Returns 0 or the exit status. */
static int parse_item_max(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	bool negative = strchr(s, '-') != NULL;

	if (*end == 'k' || *end == 'K')
		v = v > ITEM_UPPER ? ITEM_UPPER + 1 : v * 1024, end++;
	else if (*end == 'm' || *end == 'M')
		v = v > ITEM_UPPER ? ITEM_UPPER + 1 : v * 1024 * 1024, end++;
	if (end == s || negative || v < ITEM_MIN) {
		fprintf(stderr, "Item max size cannot be less than 1024 bytes.\n");
		return EX_USAGE;
	}
	if (v > ITEM_UPPER && *end == '\0') {
		fprintf(stderr, "Cannot set item size limit higher than a gigabyte.\n");
		return EX_USAGE;
	}
	if (*end != '\0' || v > LARDER_VALUE_LIMIT - LARDERD_HDR) {
		fprintf(stderr, "larderd: bad -I value '%s' (1024 to %llu bytes, k or m suffix)\n",
			s, (unsigned long long)(LARDER_VALUE_LIMIT - LARDERD_HDR));
		return EX_USAGE;
	}
	*out = (size_t)v;
	return 0;
}

/* A byte count or a number, 0..max, with an optional k/m suffix. */
static bool parse_count(const char *s, size_t max, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || *s == '-' || errno == ERANGE)
		return false;
	if (*end == 'k' || *end == 'K')
		v = v > max / 1024 ? (unsigned long long)max + 1 : v * 1024, end++;
	else if (*end == 'm' || *end == 'M')
		v = v > max / (1024 * 1024) ? (unsigned long long)max + 1 : v * 1024 * 1024, end++;
	if (*end != '\0' || v > max)
		return false;
	*out = (size_t)v;
	return true;
}

/* memcached's -l: a second -l is appended after a comma, unless the list
 * already contains it as a substring (memcached's own test, kept so that
 * stats settings' "inter" reads the same). */
static bool add_listen(struct options *o, const char *arg)
{
	size_t have = o->inter ? strlen(o->inter_buf) : 0;
	size_t need = have + (have ? 1 : 0) + strlen(arg) + 1;

	if (o->inter && strstr(o->inter_buf, arg) != NULL)
		return true;
	if (need > sizeof(o->inter_buf))
		return false;
	snprintf(o->inter_buf + have, sizeof(o->inter_buf) - have, "%s%s", have ? "," : "", arg);
	o->inter = o->inter_buf;
	return true;
}

static bool parse_dict_mode(const char *s, struct options *o)
{
	o->dict_set = true;
	o->dict_path = NULL;
	if (strcmp(s, "train") == 0)
		o->dict_mode = LARDER_DICTIONARY_TRAIN;
	else if (strcmp(s, "none") == 0)
		o->dict_mode = LARDER_DICTIONARY_NONE;
	else if (strncmp(s, "file:", 5) == 0 && s[5] != '\0')
		o->dict_mode = LARDER_DICTIONARY_GIVEN, o->dict_path = s + 5;
	else
		return false;
	return true;
}

/* memcached's checks of its tuning options -f -n -R -D (no effect here),
 * with its words and exit status: a value memcached refuses is refused
 * (-n and -R: only 0, as its atoi reads them; a negative one it takes). */
static int check_tuning(int ch, const char *arg)
{
	const char *why = ch == 'f' && atof(arg) <= 1.0 ? "Factor must be greater than 1" :
			  ch == 'n' && atoi(arg) == 0 ? "Chunk size must be greater than 0" :
			  ch == 'R' && atoi(arg) == 0 ?
			  "Number of requests per event must be greater than 0" :
			  ch == 'D' && arg[0] == '\0' ? "No delimiter specified" : NULL;

	if (why == NULL)
		return 0;
	fprintf(stderr, "%s\n", why);
	return 1;
}

/* 0: serve; -1: exit 0 (-h, -V, -i); else the exit status (EX_USAGE, or
 * memcached's own where it differs: 1 for -t and -c). */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"port", required_argument, NULL, 'p'},
		{"listen", required_argument, NULL, 'l'},
		{"unix-socket", required_argument, NULL, 's'},
		{"memory-limit", required_argument, NULL, 'm'},
		{"threads", required_argument, NULL, 't'},
		{"conn-limit", required_argument, NULL, 'c'},
		{"max-item-size", required_argument, NULL, 'I'},
		{"snapshot-file", required_argument, NULL, 'e'},
		{"protocol", required_argument, NULL, 'B'},
		{"compress-min", required_argument, NULL, OPT_COMPRESS_MIN},
		{"compress-saving", required_argument, NULL, OPT_COMPRESS_SAVING},
		{"compress-dict", required_argument, NULL, OPT_COMPRESS_DICT},
		{"shards", required_argument, NULL, OPT_SHARDS},
		{"memory-file", required_argument, NULL, 'e'},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{"license", no_argument, NULL, 'i'},
		{"unix-mask", required_argument, NULL, 'a'},
		{"enable-shutdown", no_argument, NULL, 'A'},
		{"daemon", no_argument, NULL, 'd'},
		{"pidfile", required_argument, NULL, 'P'},
		{"user", required_argument, NULL, 'u'},
		{"enable-coredumps", no_argument, NULL, 'r'},
		{"lock-memory", no_argument, NULL, 'k'},
		{"listen-backlog", required_argument, NULL, 'b'},
		{"disable-flush-all", no_argument, NULL, 'F'},
		{"disable-dumping", no_argument, NULL, 'X'},
		{"udp-port", required_argument, NULL, 'U'},
		{"slab-growth-factor", required_argument, NULL, 'f'},
		{"slab-min-size", required_argument, NULL, 'n'},
		{"enable-largepages", no_argument, NULL, 'L'},
		{"max-reqs-per-event", required_argument, NULL, 'R'},
		{"disable-watch", no_argument, NULL, 'W'},
		{"napi-ids", required_argument, NULL, 'N'},
		{"extended", required_argument, NULL, 'o'},
		{"disable-evictions", no_argument, NULL, 'M'},
		{"disable-cas", no_argument, NULL, 'C'},
		{"enable-sasl", no_argument, NULL, 'S'},
		{"auth-file", required_argument, NULL, 'Y'},
		{"enable-ssl", no_argument, NULL, 'Z'},
		{NULL, 0, NULL, 0},
	};
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "p:l:s:m:t:c:I:e:B:vVhia:AdP:u:rkb:FXU:f:n:LR:D:WN:o:MCSY:Z",
				 longs, NULL)) != -1) {
		switch (ch) {
		case 'p': {
			/* A number, as memcached reads it: the resolver would look a
			 * name up as a service and wrap 99999 to port 34463. -1 is
			 * memcached's "a port the kernel picks" (ports_file()). */
			size_t port;
			if (strcmp(optarg, EPHEMERAL_PORT) != 0 &&
			    (!parse_count(optarg, 65535, &port) || strpbrk(optarg, "kKmM"))) {
				fprintf(stderr, "larderd: bad -p value '%s' (a port number, "
					"0-65535, or -1 for one the kernel picks)\n", optarg);
				return EX_USAGE;
			}
			o->port = optarg;
			break;
		}
		case 'l':
			if (!add_listen(o, optarg)) {
				fprintf(stderr, "larderd: -l lists over %d bytes\n", INTER_MAX - 1);
				return EX_USAGE;
			}
			break;
		case 's': o->socket_path = optarg; break;
		case 'm':
			/* As memcached reads it (a number, 0 when none), but a
			 * negative one, which memcached wraps to an enormous limit. */
			o->mem_mib = strtoull(optarg, NULL, 10);
			if (strchr(optarg, '-') != NULL || o->mem_mib > (UINT64_MAX >> 20)) {
				fprintf(stderr, "larderd: bad -m value '%s' (megabytes)\n", optarg);
				return EX_USAGE;
			}
			break;
		case 't':
			/* memcached's reading (atoi), words and exit status. */
			o->threads = atoi(optarg);
			if (o->threads <= 0) {
				fprintf(stderr, "Number of threads must be greater than 0\n");
				return 1;
			}
			if (o->threads > 64)
				fprintf(stderr, "WARNING: Setting a high number of worker"
					"threads is not recommended.\n"
					" Set this value to the number of cores in"
					" your machine or less.\n");
			break;
		case 'c':
			o->maxconns = atoi(optarg);
			if (o->maxconns <= 0) {
				fprintf(stderr, "Maximum connections must be greater than 0\n");
				return 1;
			}
			break;
		case 'I':
			if ((rc = parse_item_max(optarg, &o->item_max)) != 0)
				return rc;
			break;
		case 'e': o->snapshot = optarg; break;
		case 'B':
			if (strcmp(optarg, "auto") == 0)
				o->protocol = LARDERD_PROTO_AUTO;
			else if (strcmp(optarg, "ascii") == 0)
				o->protocol = LARDERD_PROTO_ASCII;
			else if (strcmp(optarg, "binary") == 0)
				o->protocol = LARDERD_PROTO_BINARY;
			else {
				fprintf(stderr, "Invalid value for binding protocol: %s\n"
					" -- should be one of auto, binary, or ascii\n", optarg);
				return EX_USAGE;
			}
			break;
		case OPT_COMPRESS_MIN:
			if (!parse_count(optarg, LARDER_VALUE_LIMIT, &o->compress_min)) {
				fprintf(stderr, "larderd: bad --compress-min value '%s'\n", optarg);
				return EX_USAGE;
			}
			break;
		case OPT_COMPRESS_SAVING: {
			size_t pct;
			if (!parse_count(optarg, 99, &pct) || strpbrk(optarg, "kKmM")) {
				fprintf(stderr, "larderd: bad --compress-saving value '%s' (0-99)\n",
					optarg);
				return EX_USAGE;
			}
			o->compress_saving_pct = (unsigned)pct;
			break;
		}
		case OPT_COMPRESS_DICT:
			if (!parse_dict_mode(optarg, o)) {
				fprintf(stderr, "larderd: bad --compress-dict value '%s' "
					"(train, none or file:<path>)\n", optarg);
				return EX_USAGE;
			}
			break;
		case OPT_SHARDS: {
			size_t k;
			if (!parse_count(optarg, LARDER_SHARDS_MAX, &k) || strpbrk(optarg, "kKmM") ||
			    k == 0 || (k & (k - 1)) != 0) {
				fprintf(stderr, "larderd: bad --shards value '%s' (a power of two, "
					"1-%u)\n", optarg, LARDER_SHARDS_MAX);
				return EX_USAGE;
			}
			o->shards = (unsigned)k;
			break;
		}
		case 'v': o->verbose++; break;
		case 'V': printf("larderd %s\n", LARDERD_VERSION_STR); return -1;
		case 'h': usage(stdout); return -1;
		case 'i': printf("larderd is licensed under the Apache License, Version 2.0.\n"); return -1;
		case 'a': {
			char *end;
			unsigned long mask = strtoul(optarg, &end, 8);
			if (end == optarg || *end != '\0' || mask > 0777) {
				fprintf(stderr, "larderd: bad -a value '%s' (an octal mask)\n", optarg);
				return EX_USAGE;
			}
			o->unix_mask = (mode_t)mask;
			break;
		}
		case 'A': o->shutdown_enabled = true; break;
		case 'd': o->daemonize = true; break;
		case 'P': o->pidfile = optarg; break;
		case 'u': o->user = optarg; break;
		case 'r': o->coredumps = true; break;
		case 'k': o->lock_memory = true; break;
		case 'b':
			/* memcached's reading (atoi): any value goes to listen(2),
			 * which takes 0 and caps a negative one at somaxconn. */
			o->backlog = atoi(optarg);
			break;
		case 'F': o->flush_disabled = true; break;
		case 'X': o->dump_disabled = true; break;
		case 'U':
			if (strcmp(optarg, "0") != 0)
				fprintf(stderr, "larderd: warning: UDP is not served (-U %s)\n", optarg);
			break;
		case 'f': case 'n': case 'L': case 'R': case 'D': case 'W': case 'N': case 'o':
			if ((rc = check_tuning(ch, optarg)) != 0)
				return rc;
			if (ch == 'D') {
				o->prefix_delimiter = optarg[0];
				o->detail = true;
				break;
			}
			if (ch == 'o' && (rc = larderd_subopts_parse(&o->subopts, optarg)) != 0)
				return rc;
			if (o->verbose)
				fprintf(stderr, "larderd: -%c tunes memcached's own internals: no effect\n",
					ch);
			break;
		case 'M': case 'C': case 'S': case 'Y': case 'Z':
			fprintf(stderr, "larderd: -%c (%s) is not supported\n", ch,
				ch == 'M' ? "errors instead of evictions" : ch == 'C' ? "no CAS" :
				ch == 'S' ? "SASL" : ch == 'Y' ? "an auth file" : "TLS");
			return EX_USAGE;
		default: usage(stderr); return EX_USAGE;
		}
	}
	if ((rc = larderd_subopts_finish(&o->subopts)) != 0)
		return rc;
	/* memcached's -p 0 turns TCP off (also for -l host:port entries); without
	 * -s it then starts listening nowhere: refused here instead. */
	if (atoi(o->port) == 0 && o->socket_path == NULL) {
		fprintf(stderr, "larderd: -p 0 turns TCP off and there is no -s: nothing to "
			"listen on\n");
		return EX_USAGE;
	}
	if (o->threads > 256) {
		fprintf(stderr, "larderd: -t must be at most 256\n");
		return EX_USAGE;
	}
	/* memcached's own refusal, word for word; also -m 0's, as memcached's. */
	if (o->item_max > (o->mem_mib << 20) / 2) {
		fprintf(stderr, "Cannot set item size limit higher than 1/2 of memory max.\n");
		return EX_USAGE;
	}
	/* The engine takes an entry of at most 1/8 of its capacity: larger
	 * values under -I will be refused as too large; say so at start. */
	if (o->item_max > (o->mem_mib << 20) / 8)
		fprintf(stderr, "larderd: warning: -I %zu is over 1/8 of -m %llu MiB: an item "
			"(key, value and its headers) over about %llu bytes is refused as too "
			"large\n", o->item_max, (unsigned long long)o->mem_mib,
			(unsigned long long)((o->mem_mib << 20) / 8));
	/* A dictionary without compression would be silently unused. */
	if (o->dict_set && o->compress_min == 0) {
		fprintf(stderr, "larderd: --compress-dict needs --compress-min\n");
		return EX_USAGE;
	}
	return 0;
}

/* Binds and listens on every address host (NULL: all) and port resolve to;
 * returns how many sockets it added to fds[*n..max), -1 when none. */
static int listen_addr(const struct options *o, const char *host, const char *port, int *fds,
		       int *n, int max)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE};
	struct addrinfo *res, *ai;
	int before = *n, rc = getaddrinfo(host, port, &hints, &res);

	if (rc != 0) {
		fprintf(stderr, "larderd: -l %s: %s\n", host ? host : "*", gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL && *n < max; ai = ai->ai_next) {
		int one = 1;
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, o->backlog) != 0) {
			fprintf(stderr, "larderd: bind/listen: %s\n", strerror(errno));
			close(fd);
			continue;
		}
		fds[(*n)++] = fd;
	}
	freeaddrinfo(res);
	return *n > before ? *n - before : -1;
}

/*
 * memcached's server_sockets(): the -l list splits at ',' and ';'; an entry
 * is "[v6 address]", "[v6 address]:port", "host:port" (one colon), a bare
 * v6 address, or "*" (every address); an entry's own port overrides -p.
 * Every entry must listen somewhere, else the server does not start.
 */
static int listen_tcp(const struct options *o, int *fds, int max)
{
	char list[INTER_MAX], *save = NULL;
	int n = 0;
	const char *port_all = strcmp(o->port, EPHEMERAL_PORT) == 0 ? "0" : o->port;

	if (o->inter == NULL)
		return listen_addr(o, NULL, port_all, fds, &n, max);
	snprintf(list, sizeof(list), "%s", o->inter);
	for (char *p = strtok_r(list, ",;", &save); p != NULL; p = strtok_r(NULL, ",;", &save)) {
		const char *host = p, *port = port_all;
		char *colon;
		size_t v;

		if (*p == '[') {
			char *e = strchr(p, ']');
			if (e == NULL) {
				fprintf(stderr, "larderd: -l: bad IPv6 address '%s'\n", p);
				goto fail;
			}
			*e = '\0';
			host = p + 1;
			colon = e[1] == ':' ? e + 1 : NULL;
		} else {
			colon = strchr(p, ':');
			if (colon != NULL && strchr(colon + 1, ':') != NULL)
				colon = NULL; /* a bare IPv6 address */
		}
		if (colon != NULL) {
			*colon = '\0';
			port = colon + 1;
			if (!parse_count(port, 65535, &v) || strpbrk(port, "kKmM")) {
				fprintf(stderr, "larderd: -l: bad port '%s'\n", port);
				goto fail;
			}
		}
		if (strcmp(host, "*") == 0)
			host = NULL;
		if (listen_addr(o, host, port, fds, &n, max) < 0)
			goto fail;
	}
	return n > 0 ? n : -1;
fail:
	while (n > 0)
		close(fds[--n]);
	return -1;
}

static int listen_unix(const struct options *o)
{
	const char *path = o->socket_path;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* As memcached: the socket is created under the mask's complement. */
	mode_t old = umask((mode_t)(~o->unix_mask & 0777));
	int bound = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (bound != 0 || listen(fd, o->backlog) != 0) {
		fprintf(stderr, "larderd: unix socket %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The TCP port a listening socket got (the one asked for, or with -p -1 the
 * kernel's pick), and whether it is IPv6; false when getsockname fails. */
static bool bound_port(int fd, unsigned *port, bool *v6)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return false;
	*v6 = ss.ss_family == AF_INET6;
	*port = ntohs(*v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
			    ((struct sockaddr_in *)&ss)->sin_port);
	return true;
}

/*
 * memcached's ports file: when PORTS_FILE_ENV names a file, one line per
 * listening TCP socket, "TCP INET: <port>" or "TCP INET6: <port>", the port
 * it got (with -p -1, each socket its own), written to "<file>.lck" and then
 * renamed, so that whoever waits for the file never reads half of it.
 * Written once every socket listens, so a client that reads a port can
 * connect at once (the backlog holds it until the workers start). False
 * (with a message) when the file cannot be written.
 */
static bool ports_file(const int *fds, int nfd, bool tcp)
{
	const char *name = getenv(PORTS_FILE_ENV);
	char tmp[PATH_MAX];
	FILE *f;
	bool ok = true;

	if (name == NULL)
		return true;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.lck", name) >= sizeof(tmp) ||
	    (f = fopen(tmp, "w")) == NULL) {
		fprintf(stderr, "larderd: cannot write the ports file %s.lck (%s): %s\n", name,
			PORTS_FILE_ENV, strerror(errno));
		return false;
	}
	for (int i = 0; tcp && i < nfd; i++) {
		unsigned port;
		bool v6;
		if (!bound_port(fds[i], &port, &v6)) {
			ok = false;
			break;
		}
		fprintf(f, "TCP INET%s: %u\n", v6 ? "6" : "", port);
	}
	ok = fclose(f) == 0 && ok && rename(tmp, name) == 0;
	if (!ok) {
		fprintf(stderr, "larderd: cannot write the ports file %s (%s): %s\n", name,
			PORTS_FILE_ENV, strerror(errno));
		unlink(tmp);
	}
	return ok;
}

/* As memcached: make room for -c connections plus the server's own descriptors. */
static void raise_fd_limit(int maxconns)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)maxconns + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
		fprintf(stderr, "larderd: warning: only %llu file descriptors for -c %d\n",
			(unsigned long long)rl.rlim_cur, maxconns);
}

/*
 * The index is sized for one item per KiB of -m (at least 65,536), as
 * memcached's hash table starts small and grows: the engine doubles the
 * index in the background as items come, so a cache of small items pays a
 * few growths while it fills, and a cache of large items does not carry an
 * index sized for small ones (at -m 1024 with 4 KiB values, one item per
 * 256 bytes kept 48 MiB of index resident for 2 MiB of use).
 */
static uint64_t expected_entries(uint64_t mem_mib)
{
	uint64_t n = (mem_mib << 20) / 1024;
	return n < 65536 ? 65536 : n;
}

/*
 * Reads the --compress-dict file whole (1 byte to LARDER_DICTIONARY_MAX_BYTES)
 * into *buf (malloc'd); false with a message on stderr otherwise.
 */
static bool read_dict_file(const char *path, void **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	size_t n = 0;

	if (f == NULL) {
		fprintf(stderr, "larderd: --compress-dict file %s: %s\n", path, strerror(errno));
		return false;
	}
	/* One byte more than the limit tells an oversize file from a full one. */
	b = malloc(LARDER_DICTIONARY_MAX_BYTES + 1);
	if (b != NULL)
		n = fread(b, 1, LARDER_DICTIONARY_MAX_BYTES + 1, f);
	if (b == NULL || ferror(f)) {
		fprintf(stderr, "larderd: --compress-dict file %s: %s\n", path,
			b == NULL ? "out of memory" : "read error");
	} else if (n == 0 || n > LARDER_DICTIONARY_MAX_BYTES) {
		fprintf(stderr, "larderd: --compress-dict file %s: %s (1 byte to %zu KiB)\n",
			path, n == 0 ? "empty" : "too large", LARDER_DICTIONARY_MAX_BYTES >> 10);
	} else {
		fclose(f);
		*buf = b, *len = n;
		return true;
	}
	fclose(f);
	free(b);
	return false;
}

static int open_cache(const struct options *o, const void *dict, size_t dict_len, larder **out)
{
	larder_config *cfg;
	int rc = larder_config_create(&cfg);

	if (rc != LARDER_OK)
		return rc;
	if ((rc = larder_config_set_capacity(cfg, o->mem_mib << 20)) != LARDER_OK ||
	    (rc = larder_config_set_max_key_bytes(cfg, LARDERD_KEY_MAX)) != LARDER_OK ||
	    (rc = larder_config_set_max_value_bytes(cfg, o->item_max + LARDERD_HDR)) != LARDER_OK ||
	    (rc = larder_config_set_expected_entries(cfg, expected_entries(o->mem_mib))) != LARDER_OK ||
	    (rc = larder_config_set_shards(cfg, o->shards)) != LARDER_OK ||
	    (rc = larder_config_set_compression(cfg, o->compress_min, o->compress_saving_pct)) !=
		    LARDER_OK ||
	    (rc = larder_config_set_compression_dictionary(cfg, o->dict_mode, dict, dict_len)) !=
		    LARDER_OK) {
		larder_config_destroy(cfg);
		return rc;
	}
	rc = larder_open(out, cfg);
	larder_config_destroy(cfg);
	return rc;
}

/* A path made absolute (into buf) before -d moves the process to "/". */
static bool make_absolute(const char **path, char buf[PATH_MAX])
{
	char cwd[PATH_MAX];

	if (*path == NULL || (*path)[0] == '/')
		return true;
	if (getcwd(cwd, sizeof(cwd)) == NULL ||
	    snprintf(buf, PATH_MAX, "%s/%s", cwd, *path) >= PATH_MAX) {
		fprintf(stderr, "larderd: cannot make %s an absolute path\n", *path);
		return false;
	}
	*path = buf;
	return true;
}

/* -u: as memcached, only a process started as root changes identity. */
static bool assume_user(const char *user)
{
	struct passwd *pw;

	if (user == NULL || geteuid() != 0)
		return true;
	pw = getpwnam(user);
	if (pw == NULL) {
		fprintf(stderr, "larderd: can't find the user %s to switch to\n", user);
		return false;
	}
	if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
		fprintf(stderr, "larderd: failed to assume the identity of %s: %s\n", user,
			strerror(errno));
		return false;
	}
	return true;
}

/* -r, -k, -u, -d, -P: the process's setup before the cache opens. */
static bool setup_process(const struct options *o)
{
	if (o->coredumps) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_CORE, &rl) == 0) {
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_CORE, &rl) != 0)
				fprintf(stderr, "larderd: warning: -r: %s\n", strerror(errno));
		}
	}
	if (o->lock_memory && mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
		fprintf(stderr, "larderd: warning: -k: mlockall() failed: %s\n", strerror(errno));
	if (!assume_user(o->user))
		return false;
	if (o->daemonize) {
		signal(SIGHUP, SIG_IGN);
		/* -r keeps the working directory, where a core file would go. */
		if (daemon(o->coredumps, o->verbose > 0) != 0) {
			fprintf(stderr, "larderd: cannot daemonize: %s\n", strerror(errno));
			return false;
		}
	}
	if (o->pidfile != NULL) {
		FILE *f = fopen(o->pidfile, "w");
		if (f == NULL || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0)
			fprintf(stderr, "larderd: warning: could not write the pid file %s\n",
				o->pidfile);
	}
	return true;
}

static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGUSR1);
}

/* Start-up: the snapshot, if one was named and exists. */
static void load_snapshot(const struct options *o, larder *cache)
{
	int rc = larder_load(cache, o->snapshot);
	if (rc == LARDER_ESYS && errno == ENOENT) {
		if (o->verbose)
			fprintf(stderr, "larderd: no snapshot at %s; starting empty\n", o->snapshot);
		return;
	}
	if (rc != LARDER_OK) {
		int saved = errno;
		fprintf(stderr, "larderd: snapshot %s not loaded (%s%s%s); starting empty\n",
			o->snapshot, larder_strerror(rc), rc == LARDER_ESYS ? ": " : "",
			rc == LARDER_ESYS ? strerror(saved) : "");
		return;
	}
	if (o->verbose) {
		uint64_t v[LARDER_STAT_WRITES + 1] = {0};
		larderd_ignore(larder_stats(cache, v, LARDER_STAT_WRITES + 1));
		fprintf(stderr, "larderd: loaded %llu items from %s\n",
			(unsigned long long)v[LARDER_STAT_WRITES], o->snapshot);
	}
}

/* Waits for SIGTERM/SIGINT/SIGUSR1 and returns it; runs a delayed flush_all when due. */
static int wait_for_signal(struct larderd_shared *sh)
{
	sigset_t set;
	struct timespec one_s = {1, 0};

	stop_signals(&set);
	for (;;) {
		int sig = sigtimedwait(&set, NULL, &one_s);

		if (sig == SIGTERM || sig == SIGINT || sig == SIGUSR1)
			return sig;
		larderd_flush_due(sh); /* for a server without traffic: commands run it too */
	}
}

int main(int argc, char **argv)
{
	struct options o = {.port = "11211", .mem_mib = 64, .threads = 4, .maxconns = 1024,
			    .item_max = 1024 * 1024, .protocol = LARDERD_PROTO_AUTO,
			    .compress_saving_pct = DEFAULT_COMPRESS_SAVING_PCT,
			    .dict_mode = LARDER_DICTIONARY_TRAIN, .unix_mask = DEFAULT_UNIX_MASK,
			    .backlog = DEFAULT_BACKLOG, .shards = 1,
			    .subopts = LARDERD_SUBOPTS_INIT, .prefix_delimiter = ':'};
	static char snapshot_path[PATH_MAX], socket_path[PATH_MAX], pid_path[PATH_MAX];
	static struct larderd_shared sh;
	struct larderd_net *net;
	sigset_t set;
	int fds[LISTEN_MAX], nfd, rc;

	rc = parse_args(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit(o.maxconns);
	stop_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (!make_absolute(&o.snapshot, snapshot_path) ||
	    !make_absolute(&o.socket_path, socket_path) || !make_absolute(&o.pidfile, pid_path))
		return 71;
	if (o.socket_path) {
		fds[0] = listen_unix(&o);
		nfd = fds[0] >= 0 ? 1 : -1;
	} else {
		nfd = listen_tcp(&o, fds, LISTEN_MAX);
	}
	if (nfd < 0) {
		fprintf(stderr, "larderd: failed to listen\n");
		return 71;
	}
	if (!ports_file(fds, nfd, o.socket_path == NULL))
		return 71;
	void *dict = NULL;
	size_t dict_len = 0;
	if (o.dict_path != NULL && !read_dict_file(o.dict_path, &dict, &dict_len))
		return 66;
	if (!setup_process(&o)) {
		free(dict);
		return 71;
	}
	rc = open_cache(&o, dict, dict_len, &sh.cache);
	free(dict); /* the engine keeps its own copy */
	if (rc != LARDER_OK) {
		fprintf(stderr, "larderd: cannot open the cache: %s%s\n", larder_strerror(rc),
			rc == LARDER_EINVAL && o.dict_path != NULL ?
				" (the --compress-dict file starts as a zstd dictionary but "
				"does not parse as one)" : "");
		return 71;
	}
	if (o.snapshot)
		load_snapshot(&o, sh.cache);
	sh.item_max = o.item_max;
	/* Relaxed: set before the workers start (pthread_create publishes it). */
	atomic_store_explicit(&sh.maxbytes, o.mem_mib << 20, memory_order_relaxed);
	sh.threads = o.threads;
	sh.maxconns = o.maxconns;
	sh.port = o.socket_path ? 0 : atoi(o.port);
	sh.backlog = o.backlog;
	sh.unix_mask = (unsigned)o.unix_mask;
	sh.inter = o.inter;
	sh.socket_path = o.socket_path;
	sh.snapshot = o.snapshot;
	sh.protocol = o.protocol;
	sh.started = time(NULL);
	sh.shutdown_enabled = o.shutdown_enabled;
	sh.flush_disabled = o.flush_disabled;
	sh.dump_disabled = o.dump_disabled;
	atomic_store_explicit(&sh.verbosity, o.verbose, memory_order_relaxed);
	larderd_shared_init(&sh, o.prefix_delimiter);
	atomic_store_explicit(&sh.detail.on, o.detail, memory_order_relaxed);

	net = larderd_net_start(&sh, fds, nfd);
	if (net == NULL) {
		fprintf(stderr, "larderd: cannot start workers: %s\n", strerror(errno));
		larder_close(sh.cache);
		return 71;
	}
	if (o.verbose && o.socket_path)
		fprintf(stderr, "larderd: serving on %s with %d threads\n", o.socket_path, o.threads);
	else if (o.verbose) {
		unsigned port; /* with -p -1, the port the kernel picked */
		bool v6;
		if (!bound_port(fds[0], &port, &v6))
			port = (unsigned)atoi(o.port);
		fprintf(stderr, "larderd: serving on %s:%u with %d threads\n",
			o.inter ? o.inter : "*", port, o.threads);
	}
	int sig = wait_for_signal(&sh);
	larderd_net_stop(net);
	if (o.snapshot && sig != SIGINT) {
		rc = larder_save(sh.cache, o.snapshot);
		if (rc != LARDER_OK) {
			int saved = errno;
			fprintf(stderr, "larderd: snapshot %s not saved: %s%s%s\n", o.snapshot,
				larder_strerror(rc), rc == LARDER_ESYS ? ": " : "",
				rc == LARDER_ESYS ? strerror(saved) : "");
		} else if (o.verbose) {
			fprintf(stderr, "larderd: saved the cache to %s\n", o.snapshot);
		}
	}
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
	if (o.socket_path)
		unlink(o.socket_path);
	if (o.daemonize && o.pidfile != NULL) /* as memcached: only a daemon's */
		unlink(o.pidfile);
	larder_close(sh.cache);
	larderd_detail_fini(&sh.detail);
	if (o.verbose)
		fprintf(stderr, "larderd: shut down cleanly\n");
	return 0;
}
