/* Known access and branch patterns for checking markbench's cycle model
 * against cachegrind. One pattern per run, named by the first argument
 * (and a size in KiB for the cache patterns, a number of pairs of processes
 * for the sharing cases). Setup touches the data
 * first; only region() is the timed region: in the guest it runs between
 * markbench's marker NOPs, on the host cachegrind's counts of the function
 * region (and of memcpy, which it calls) are read.
 *
 * As a guest's /init (pid 1) it takes its arguments from the kernel
 * command line after "--", prints the region's guest time and reboots
 * (QEMU runs with -no-reboot, so it exits). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <sched.h>

#define LINE 64
/* The sharing cases' pairs, each on lines of its own: four lines from
 * one pair's to the next's, so that no pair's line is next to another's
 * (hardware prefetchers fetch lines in pairs of two), all below the
 * start counter at 2048 bytes. */
#define MAX_PAIRS 4
#define PAIR_STRIDE (4 * LINE)

static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

struct node {
	struct node *next;
	char pad[LINE - sizeof(struct node *)];
};

static char *buffer;
static size_t bytes;
static unsigned char *outcomes;
static size_t count;
static int mode;
static int pairs = 1;
static volatile uint64_t sink;
/* Natively only (PATTERNS_CLOCK set): each process of the sharing pair
 * times its own counting, apart from the fork and the wait around it. */
static int clock_native;

static long long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (long long)(b->tv_sec - a->tv_sec) * 1000000000ll + (b->tv_nsec - a->tv_nsec);
}

static void mark_start(void)
{
	__asm__ volatile(".byte 0x0f,0x1f,0x80,0x01,0x53,0x42,0x4d" ::: "memory");
}

static void mark_end(void)
{
	__asm__ volatile(".byte 0x0f,0x1f,0x80,0x02,0x53,0x42,0x4d" ::: "memory");
}

__attribute__((noinline)) static void region(void)
{
	uint64_t sum = 0;
	switch (mode) {
	case 0: { /* pointer chase: one dependent load per line, random order */
		struct node *n = (struct node *)buffer;
		for (size_t i = 0; i < count; i++)
			n = n->next;
		sum = (uint64_t)n;
		break;
	}
	case 1: /* sequential sweep: every 8 bytes, `count` passes */
		for (size_t p = 0; p < count; p++)
			for (size_t i = 0; i < bytes; i += 8)
				sum += *(volatile uint64_t *)(buffer + i);
		break;
	case 2: /* 4 KiB memcpy, over and over between two buffers */
		for (size_t i = 0; i < count; i++)
			memcpy(buffer + 4096 * (i & 1), buffer + 4096 * (2 + (i & 1)), 4096);
		break;
	case 4: { /* `pairs` pairs of processes, each process incrementing
		   its own counter (or, with `bytes` 0, each pair one counter
		   with a locked add); each pair on a line of its own */
		volatile uint64_t *ready = (volatile uint64_t *)(buffer + 2048);
		int processes = 2 * pairs, me = 0;
		pid_t children[2 * MAX_PAIRS - 1];
		/* Process 0 (the parent) forks the others; process i pins itself
		 * to vCPU i, so that pair p is on vCPUs 2p and 2p + 1 (where
		 * there are fewer vCPUs the call fails and the processes share
		 * them); each says where it runs. */
		for (int i = 1; i < processes; i++) {
			pid_t pid = fork();
			if (pid == 0) {
				me = i;
				break;
			}
			children[i - 1] = pid;
		}
		cpu_set_t cpus;
		CPU_ZERO(&cpus);
		CPU_SET(me, &cpus);
		int pinned = sched_setaffinity(0, sizeof cpus, &cpus) == 0;
		printf("process %d pinned %s, on cpu %d\n", me, pinned ? "yes" : "no", sched_getcpu());
		fflush(stdout);
		/* All start counting together: each waits for the others
		 * (yielding, so that on one vCPU the others get to run). */
		__atomic_add_fetch(ready, 1, __ATOMIC_SEQ_CST);
		while (*ready < (uint64_t)processes)
			sched_yield();
		/* The second of a pair at its pair's line, the first `bytes`
		 * further (one pair: the offsets the check has always used). */
		volatile uint64_t *mine = (volatile uint64_t *)(buffer + (me / 2) * PAIR_STRIDE +
								 (me % 2 ? 0 : bytes));
		struct timespec from, to;
		if (clock_native)
			clock_gettime(CLOCK_MONOTONIC, &from);
		if (bytes == 0) {
			for (size_t i = 0; i < count; i++)
				__atomic_fetch_add(mine, 1, __ATOMIC_RELAXED);
		} else {
			for (size_t i = 0; i < count; i++)
				(*mine)++;
		}
		if (clock_native) {
			clock_gettime(CLOCK_MONOTONIC, &to);
			printf("process %d counted %zu in %lld ns, from %lld\n", me, count,
			       elapsed_ns(&from, &to), from.tv_sec * 1000000000ll + from.tv_nsec);
			fflush(stdout);
		}
		if (me != 0)
			_exit(0);
		for (int i = 0; i < processes - 1; i++)
			waitpid(children[i], 0, 0);
		sum = *mine;
		break;
	}
	case 5: /* a chain of dependent adds, eight an iteration: one cycle an
		   add on any current x86 core, so its time gives the clock */
		for (size_t i = 0; i < count; i++)
			__asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
					 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
					 : "+r"(sum) : "r"(i));
		break;
	case 6: { /* four independent chains of adds, two adds each an iteration:
		     the core runs them side by side */
		uint64_t a = 0, b = 1, c = 2, d = 3;
		for (size_t i = 0; i < count; i++)
			__asm__ volatile("add %4, %0\n\tadd %4, %1\n\tadd %4, %2\n\tadd %4, %3\n\t"
					 "add %4, %0\n\tadd %4, %1\n\tadd %4, %2\n\tadd %4, %3"
					 : "+r"(a), "+r"(b), "+r"(c), "+r"(d) : "r"(i));
		sum = a + b + c + d;
		break;
	}
	case 7: { /* ordinary code: insertion into a sorted array of 4 KiB
		     keys by binary search and a shifting copy, then a hash
		     table's probes */
		uint32_t *keys = (uint32_t *)buffer, n = 0;
		uint32_t *table = (uint32_t *)(buffer + 4096 * 4);
		for (size_t i = 0; i < count; i++) {
			uint32_t k = (uint32_t)(i * 2654435761u);
			if (n < 1024) {
				uint32_t lo = 0, hi = n;
				while (lo < hi) {
					uint32_t mid = (lo + hi) / 2;
					if (keys[mid] < k) lo = mid + 1; else hi = mid;
				}
				memmove(keys + lo + 1, keys + lo, (n - lo) * sizeof *keys);
				keys[lo] = k;
				n++;
			} else {
				n = 0;
			}
			uint32_t h = (k ^ (k >> 15)) & 16383;
			while (table[h] && table[h] != k)
				h = (h + 1) & 16383;
			table[h] = k;
			sum += h;
		}
		break;
	}
	case 3: /* one conditional branch per outcome */
		for (size_t i = 0; i < count; i++) {
			if (outcomes[i])
				sum += i;
			else
				sum ^= i;
			__asm__ volatile("" : "+r"(sum));
		}
		break;
	}
	sink = sum;
}

/* The add chain of the clock, apart from region() so that a native run
 * can time it just before and just after the region, in the same
 * process. Short chains, the least of several: a chain the host's
 * scheduler interrupts only takes longer, and one of several short ones
 * is likely to run whole. */
#define CLOCK_ADDS 1000000
#define CLOCK_CHAINS 7
__attribute__((noinline)) static long long clock_chain_ns(void)
{
	long long least = -1;
	for (int chain = 0; chain < CLOCK_CHAINS; chain++) {
		struct timespec a, b;
		uint64_t sum = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (size_t i = 0; i < CLOCK_ADDS / 8; i++)
			__asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
					 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
					 : "+r"(sum) : "r"(i));
		clock_gettime(CLOCK_MONOTONIC, &b);
		sink = sum;
		long long ns = (long long)(b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec);
		if (least < 0 || ns < least)
			least = ns;
	}
	return least;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s chase|sweep KIB | memcpy | random|periodic|taken | adds|wide|mixed | shared|apart|true [PAIRS]\n", argv[0]);
		return 2;
	}
	const char *what = argv[1];
	clock_native = getenv("PATTERNS_CLOCK") != NULL;
	size_t kib = argc > 2 ? strtoul(argv[2], 0, 10) : 64;
	bytes = kib << 10;
	if (!strcmp(what, "chase")) {
		mode = 0;
		size_t nodes = bytes / LINE;
		buffer = aligned_alloc(4096, bytes);
		size_t *order = malloc(nodes * sizeof *order);
		for (size_t i = 0; i < nodes; i++)
			order[i] = i;
		for (size_t i = nodes - 1; i > 0; i--) {
			size_t j = next_random() % (i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		struct node *n = (struct node *)buffer;
		for (size_t i = 0; i < nodes; i++)
			n[order[i]].next = &n[order[(i + 1) % nodes]];
		/* Start at order[0]'s node: buffer's first node is on the cycle. */
		count = nodes * 4 > 400000 ? nodes * 4 : 400000;
		free(order);
	} else if (!strcmp(what, "sweep")) {
		mode = 1;
		buffer = aligned_alloc(4096, bytes);
		memset(buffer, 1, bytes);
		count = (16u << 20) / bytes ? (16u << 20) / bytes : 1;
	} else if (!strcmp(what, "memcpy")) {
		mode = 2;
		bytes = 4 * 4096;
		buffer = aligned_alloc(4096, bytes);
		memset(buffer, 1, bytes);
		count = 20000;
	} else if (!strcmp(what, "shared") || !strcmp(what, "apart") || !strcmp(what, "true")) {
		/* The counters 8 bytes apart (one line, false sharing), a line
		 * apart, or one counter both add to (true sharing). */
		mode = 4;
		buffer = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		memset(buffer, 0, 4096);
		bytes = !strcmp(what, "shared") ? 8 : !strcmp(what, "apart") ? LINE : 0;
		/* A second argument: how many pairs (pair p pinned to vCPUs 2p
		 * and 2p + 1), one by default. */
		pairs = argc > 2 ? atoi(argv[2]) : 1;
		if (pairs < 1 || pairs > MAX_PAIRS) {
			fprintf(stderr, "%s: 1 to %d pairs\n", what, MAX_PAIRS);
			return 2;
		}
		/* Natively twenty times as many: the two processes start some
		 * tens of microseconds apart, and should count side by side for
		 * most of the time. */
		count = clock_native ? 4000000 : 200000;
	} else if (!strcmp(what, "adds") || !strcmp(what, "wide")) {
		mode = !strcmp(what, "adds") ? 5 : 6;
		count = 2000000;
	} else if (!strcmp(what, "mixed")) {
		mode = 7;
		buffer = aligned_alloc(4096, 4096 * 4 + 16384 * 4);
		memset(buffer, 0, 4096 * 4 + 16384 * 4);
		count = 12000;
	} else {
		mode = 3;
		count = 200000;
		outcomes = malloc(count);
		for (size_t i = 0; i < count; i++) {
			if (!strcmp(what, "random"))
				outcomes[i] = next_random() & 1;
			else if (!strcmp(what, "periodic"))
				outcomes[i] = (0x16 >> (i % 5)) & 1; /* 0,1,1,0,1 */
			else
				outcomes[i] = 1;
		}
	}
	/* Natively (PATTERNS_CLOCK set; a guest's /init has no such
	 * variable) the add chain runs just before and after the region. */
	int clock = clock_native;
	long long before = clock ? clock_chain_ns() : 0;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	mark_start();
	region();
	mark_end();
	clock_gettime(CLOCK_MONOTONIC, &b);
	long long after = clock ? clock_chain_ns() : 0;
	printf("pattern %s %zu KiB: region %lld ns\n", what, kib,
	       (long long)(b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec));
	if (clock)
		printf("clock: %d adds %lld ns before, %lld ns after\n", CLOCK_ADDS, before, after);
	fflush(stdout);
	if (getpid() == 1) {
		sync();
		reboot(RB_AUTOBOOT);
	}
	return 0;
}
