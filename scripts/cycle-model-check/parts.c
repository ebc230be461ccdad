/*
 * Parts of a timed region, for the cycle model's plugin: run as /init of a
 * boot under the plugin with model=cycles (docs/cycle-model.md, "The
 * Desnoyers 2006 micro loops"). Inside one region it marks part 2 around
 * 100 000 iterations of an empty loop, part 5 around 1 000 copies of
 * 4 KiB, part 15 with a nested start of part 6 inside it (ignored: parts
 * do not nest), then, after the region, part 0 (dropped: outside a region).
 */
#include <stdio.h>
#include <unistd.h>
#include <sys/reboot.h>
#define MARK(b) __asm__ volatile(".byte 0x0f,0x1f,0x80," #b ",0x53,0x42,0x4d" ::: "memory")
static char src[4096], dst[4096];
__attribute__((noinline)) static void spin(long n) { for (long i = 0; i < n; i++) __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void copy(long n) { for (long i = 0; i < n; i++) { void *d = dst; __asm__ volatile("" : "+r"(d)); __builtin_memcpy(d, src, 4096); } }
int main(void) {
	MARK(0x01);
	MARK(0x12); spin(100000); MARK(0x03);
	MARK(0x15); copy(1000); MARK(0x03);
	MARK(0x1f); spin(1000); MARK(0x16); spin(5); MARK(0x03); /* nested start ignored */
	MARK(0x02);
	MARK(0x10); spin(10); MARK(0x03); /* outside a region: dropped */
	printf("parts done\n"); fflush(stdout);
	if (getpid() == 1) { sync(); reboot(RB_AUTOBOOT); }
	return 0;
}
