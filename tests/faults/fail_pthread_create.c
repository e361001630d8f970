/* An LD_PRELOAD library for the fault tests: it makes one chosen
 * pthread_create() of the process fail with EAGAIN, the way a pids cgroup
 * limit or `ulimit -u` makes it fail, and counts the calls so that a test can
 * learn how many threads a step starts. A test process drives it through
 * ctypes (the symbols are global once preloaded):
 *
 *   interp_rpc_fail_pthread_create(n)    from now on, count calls afresh and
 *                                        fail the nth one, once (0: none)
 *   interp_rpc_pthread_create_calls()    calls counted since then
 *   interp_rpc_pthread_create_failures() calls failed since then
 *
 * A process that cannot be driven from inside before its threads start (the
 * kernel) is given the nth call to fail, counted from its start, in the
 * environment: INTERP_RPC_FAIL_PTHREAD_CREATE=n.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static atomic_long g_calls;
static atomic_long g_fail_at;
static atomic_long g_failures;

__attribute__((constructor)) static void fail_from_the_environment(void) {
  const char *nth = getenv("INTERP_RPC_FAIL_PTHREAD_CREATE");
  if (nth != NULL) atomic_store(&g_fail_at, strtol(nth, NULL, 10));
}

void interp_rpc_fail_pthread_create(long nth) {
  atomic_store(&g_fail_at, 0);
  atomic_store(&g_calls, 0);
  atomic_store(&g_failures, 0);
  atomic_store(&g_fail_at, nth);
}

long interp_rpc_pthread_create_calls(void) { return atomic_load(&g_calls); }

long interp_rpc_pthread_create_failures(void) { return atomic_load(&g_failures); }

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                   void *arg) {
  static _Atomic(pthread_create_fn) real;
  pthread_create_fn create = atomic_load(&real);
  if (create == NULL) {
    void *next = dlsym(RTLD_NEXT, "pthread_create");
    if (next == NULL) {
      fprintf(stderr, "fail_pthread_create: no next pthread_create: %s\n", dlerror());
      abort();
    }
    memcpy(&create, &next, sizeof create); /* POSIX's way from dlsym to a function */
    atomic_store(&real, create);
  }
  const long nth = atomic_fetch_add(&g_calls, 1) + 1;
  if (nth == atomic_load(&g_fail_at)) {
    atomic_fetch_add(&g_failures, 1);
    return EAGAIN;
  }
  return create(thread, attr, start, arg);
}
