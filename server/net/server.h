/*
 * server.h - larderd's network layer: worker threads, each with its own epoll
 * loop, and the connections they own.
 *
 * Threads: every worker waits on the shared listening sockets with
 * EPOLLEXCLUSIVE (the kernel wakes one worker per new connection) and owns
 * the connections it accepts for their whole life, so a connection is never
 * touched by two threads and needs no lock. Workers stop when the stop
 * eventfd becomes readable.
 */
#ifndef LARDER_SERVER_NET_H
#define LARDER_SERVER_NET_H

#include "../exec/exec.h"

struct larder__net;

/*
 * Starts sh->threads workers serving the listening sockets lfds[0..nlfd).
 * Returns NULL on failure (errno set). Allocates.
 */
struct larder__net *larder__net_start(struct larder__shared *sh, const int *lfds, int nlfd);
/* Tells every worker to stop, joins them, closes their connections and frees. */
void larder__net_stop(struct larder__net *net);

#endif
