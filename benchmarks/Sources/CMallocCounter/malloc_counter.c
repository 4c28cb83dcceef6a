#include "malloc_counter.h"

#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>

// glibc's allocator under its internal names.
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static _Atomic uint64_t total;
static _Thread_local uint64_t per_thread;

static inline void count(void) {
    atomic_fetch_add_explicit(&total, 1, memory_order_relaxed);
    per_thread++;
}

uint64_t malloc_counter_total(void) { return atomic_load_explicit(&total, memory_order_relaxed); }
uint64_t malloc_counter_thread(void) { return per_thread; }

void *malloc(size_t size) {
    count();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    count();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    count();
    return __libc_realloc(p, size);
}

void *memalign(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    count();
    void *p = __libc_memalign(alignment, size);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}
