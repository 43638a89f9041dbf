//go:build linux && cgo

package catalog

/*
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RTBD_MALLOC_ARENAS 2

// Runs when the program is loaded, before the Go runtime starts threads:
// glibc fixes its arena limit when a second thread first allocates, so a
// Go init() would be too late (measured: 5 arenas with mallopt in init, 2
// with this). MALLOC_ARENA_MAX in the environment wins. A no-op on a C
// library without M_ARENA_MAX (e.g. musl).
__attribute__((constructor)) static void rtbd_limit_arenas(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, RTBD_MALLOC_ARENAS);
	}
#endif
}

// rtbd_malloc_arenas counts glibc's arenas (malloc_info's <heap> elements).
static int rtbd_malloc_arenas(void) {
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) {
		return -1;
	}
	malloc_info(0, f);
	fclose(f);
	int n = 0;
	for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) {
		n++;
	}
	free(buf);
	return n;
}
*/
import "C"

// MallocArenas is the number of glibc malloc arenas a process using the
// index keeps, unless MALLOC_ARENA_MAX is set in its environment (glibc
// then honours that instead).
//
// Built with cgo, Pebble allocates its block cache and every block it
// reads outside the Go heap, with C malloc, from whichever OS thread runs
// the goroutine. glibc gives threads their own arenas (up to 8 per core)
// and keeps what each frees for later use in that arena, so a catalog
// node serving random lookups held about 50 MiB more than its caches:
// with 1,000,000 products, 64 MiB block cache and 50,000 hot products,
// VmHWM 301-323 MiB (over the 300 MiB bound) against 257-261 MiB
// with two arenas, each after 30 s of 16 concurrent callers.
const MallocArenas = C.RTBD_MALLOC_ARENAS

// mallocArenas is the number of arenas glibc has now (-1 if unknown).
func mallocArenas() int { return int(C.rtbd_malloc_arenas()) }
