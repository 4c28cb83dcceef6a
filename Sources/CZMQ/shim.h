#include <zmq.h>
#include <pthread.h>
#include <sys/eventfd.h>

/* glibc declares pthread_setname_np only under _GNU_SOURCE, which Swift's Glibc module is not
 * built with; the loop thread uses it for its name ("earshot-io"). */
extern int pthread_setname_np(pthread_t thread, const char *name);
