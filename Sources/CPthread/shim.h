#include <pthread.h>

/* glibc declares pthread_setname_np (glibc 2.12) only under _GNU_SOURCE, which Swift's Glibc
 * module is not built with; NamedThread uses it to name its threads ("earshot-io"). */
extern int pthread_setname_np(pthread_t thread, const char *name);
