/*
 * test_assert.c - LARDER__ASSERT (core/assert.h) fires when an invariant
 * breaks, and only then.
 *
 *   fires   a slot freed twice breaks the slab's SLAB-S1 (a free slot has
 *           its bit in exactly one bitmap): the second larder__slab_free()
 *           must abort with "larder: ...slab.h:N: assertion failed: ...";
 *   quiet   the same steps without the second free exit normally, so the
 *           abort above comes from the broken invariant, not the seam.
 * The victim runs in a forked child (the slab API used directly, as the
 * maintainer does, is the seam); the parent reads its stderr through a pipe
 * and checks that it died of SIGABRT. A build without LARDER_ASSERTS compiles
 * the checks out: the test reports itself skipped (exit 77).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "mem/slab.h"

#define SLOT_BYTES 100

/* Allocates a slot, publishes it and frees it, then frees it again when
 * twice is set; exits 0 if nothing aborted. Runs in the child. */
static void victim(int twice)
{
	static struct larder__slab s;
	static struct larder__slab_cursor c;
	if (larder__slab_init(&s) != 0)
		_exit(2);
	void *p = larder__slab_alloc(&s, &c, SLOT_BYTES);
	if (!p)
		_exit(3);
	larder__slab_note_live(&s, p, SLOT_BYTES);
	larder__slab_free(&s, p, SLOT_BYTES);
	if (twice)
		larder__slab_free(&s, p, SLOT_BYTES);
	larder__slab_release_cursor(&s, &c);
	larder__slab_destroy(&s);
	_exit(0);
}

struct outcome {
	int status;
	char err[4096];
};

/* Runs victim(twice) in a child; its wait status and stderr into o. */
static int run_victim(int twice, struct outcome *o)
{
	int fds[2];
	if (!CHECK(pipe(fds) == 0))
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (!CHECK(pid >= 0))
		return -1;
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		victim(twice);
	}
	close(fds[1]);
	size_t n = 0;
	ssize_t got;
	while (n < sizeof(o->err) - 1 &&
	       (got = read(fds[0], o->err + n, sizeof(o->err) - 1 - n)) > 0)
		n += (size_t)got;
	o->err[n] = '\0';
	close(fds[0]);
	if (!CHECK(waitpid(pid, &o->status, 0) == pid))
		return -1;
	return 0;
}

static void test_fires(void)
{
	struct outcome o;
	if (run_victim(1, &o) != 0)
		return;
	if (!CHECK(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT))
		printf("  status 0x%x, stderr: %s\n", o.status, o.err);
	CHECK(strstr(o.err, "larder: ") == o.err);
	CHECK(strstr(o.err, "mem/slab.h:") != NULL);
	CHECK(strstr(o.err, ": assertion failed: !(was & bit)") != NULL);
}

static void test_quiet(void)
{
	struct outcome o;
	if (run_victim(0, &o) != 0)
		return;
	if (!CHECK(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0))
		printf("  status 0x%x, stderr: %s\n", o.status, o.err);
	CHECK(strstr(o.err, "assertion failed") == NULL);
}

int main(int argc, char **argv)
{
#ifndef LARDER_ASSERTS
	(void)argc;
	(void)argv;
	(void)test_fires;
	(void)test_quiet;
	puts("test_assert: SKIPPED: built without LARDER_ASSERTS (LARDER__ASSERT compiled out)");
	return 77;
#else
	static const struct th_test tests[] = {
		TH_TEST(test_fires),
		TH_TEST(test_quiet),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
#endif
}
