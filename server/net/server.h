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
#ifndef LARDERD_NET_H
#define LARDERD_NET_H

#include "../exec/exec.h"

struct larderd_net;

/*
 * Starts sh->threads workers serving the listening sockets lfds[0..nlfd).
 * Returns NULL on failure (errno set). Allocates.
 */
struct larderd_net *larderd_net_start(struct larderd_shared *sh, const int *lfds, int nlfd);
/* Tells every worker to stop, joins them, closes their connections and frees. */
void larderd_net_stop(struct larderd_net *net);

#endif
