/* Shared by iotrace.bpf.c and the agent (through the skeleton's generated types). */
#ifndef IOPIPE_IOTRACE_H
#define IOPIPE_IOTRACE_H

/* log2 slots of microseconds: slot i counts [2^i, 2^(i+1)) us, slot 0 also < 1 us;
 * the last slot also holds everything longer (2^26 us is 67 s). */
#define MAX_SLOTS 27
#define COMM_LEN 16
/* In-flight requests remembered per disk, indexed by driver tag (see tag_slot()). */
#define TAG_SLOTS 512

enum latency_kind {
	LATENCY_DEVICE = 0, /* dispatch -> complete (btt D2C) */
	LATENCY_QUEUE = 1,  /* request allocated (just before insertion) -> dispatch */
	LATENCY_TOTAL = 2,  /* request allocated -> complete */
	LATENCY_KINDS = 3,
};

enum io_op {
	IO_READ = 0,
	IO_WRITE = 1,
	IO_DISCARD = 2,
	IO_FLUSH = 3,
	OPS = 4, /* how many: the agent's tables take it from the BTF types */
};

struct disk_key {
	unsigned int major;
	unsigned int minor;
};

struct hist {
	unsigned long long slots[MAX_SLOTS];
	unsigned long long count;
	unsigned long long sum_us;
};

/* One disk's histograms on one CPU, cumulative since the disk first completed an I/O
 * there: the agent reports differences, so counts are exact. max_us holds the largest
 * latency of the interval whose number is in max_interval (see the global `interval`).
 * The tables are indexed by request queue, so each copy names the disk it counts
 * (0:0 for none yet): a queue number freed by one disk can go to another. */
struct disk_hists {
	struct disk_key disk;
	struct hist hist[OPS][LATENCY_KINDS];
	unsigned long long max_us[OPS][LATENCY_KINDS];
	unsigned long long max_interval[OPS][LATENCY_KINDS];
	unsigned long long errors[OPS];
	/* Flush sequences: a write carrying a cache flush (PREFLUSH, or FUA the disk lacks)
	 * to a disk with a volatile cache. Its data, if any, is dispatched and timed as a
	 * write, its flushes as flushes; the kernel counts the write once, when the
	 * sequence ends (a completion with nothing dispatched behind it, never timed). */
	unsigned long long flush_sequence_data; /* data parts timed (or untracked) as writes */
	unsigned long long flush_sequence_ends; /* sequences ended: one write each in diskstats */
};

/* What the completion needs to know of a request's dispatch. One cache line each:
 * neighbouring tags are dispatched and completed on different CPUs. */
struct tag_slot {
	unsigned long long request; /* address of the struct request, 0 when free */
	unsigned long long issue_ns;
	unsigned long long task;    /* the dispatching task_struct, for its name if sampled */
	unsigned int pid;
	unsigned int inflight; /* requests in flight on the disk at dispatch, this one included */
} __attribute__((aligned(64)));

/* The key of a CPU's retired histograms of a disk (see struct disk_hists). */
struct retired_key {
	struct disk_key disk;
	unsigned int cpu;
};

/* Written by the BPF programs only. `owner` is the disk using this request queue's
 * entry (major << 32 | minor; 0 before its first I/O). */
struct disk_state {
	unsigned long long owner __attribute__((aligned(64)));
	long long inflight;
	unsigned long long recorder_until_ns; /* flight recorder started by an outlier cluster */
	unsigned long long second;            /* the ktime second the counts below count */
	unsigned long long events_in_second;
	unsigned long long outliers_in_second;
	unsigned long long ios_in_second;
	unsigned long long ios_last_second;   /* completions in the second before; 0 after an idle one */
	struct tag_slot slots[TAG_SLOTS];
};

/* Written by the agent only: thresholds from the disk's own recent distribution, and a
 * flight recorder started when the disk's latency shape shifts. */
struct disk_config {
	unsigned long long outlier_ns[OPS]; /* device time above this is an outlier; 0: ceiling only */
	unsigned long long recorder_until_ns;
	unsigned long long cluster_outliers; /* outliers in one second that start a recording; 0: the default */
};

enum sample_reason {
	SAMPLE_OUTLIER = 0,
	SAMPLE_UNIFORM = 1,
	SAMPLE_RECORDER = 2,
};

/* One sampled I/O, through the ring buffer. Times are ktime (CLOCK_MONOTONIC). */
struct event {
	unsigned int major;
	unsigned int minor;
	unsigned long long sector;
	unsigned long long issue_ns;
	unsigned long long complete_ns;
	unsigned long long queue_ns;
	unsigned int bytes;
	unsigned int status; /* blk_status_t: the agent turns it into -errno */
	unsigned int inflight;
	unsigned int pid;
	unsigned char op;     /* enum io_op */
	unsigned char reason; /* enum sample_reason */
	unsigned short pad;
	unsigned int weight;  /* 1 / sampling probability */
	char comm[COMM_LEN];
};

/* Everything the BPF side sees, misses or drops, counted per CPU. The agent exports them
 * in this order (KERNEL_COUNTERS in iotrace.rs). */
enum bpf_counter {
	/* completions with no dispatch time of ours (dispatched before we attached, their tag
	 * slot taken by another request, their queue's entry being taken over) nor of the
	 * kernel's (stamped only when queue statistics are on): not in the histograms */
	COUNTER_UNTRACKED = 0,
	COUNTER_PARTIAL = 1,          /* partial completions (the request goes on) */
	/* completions of request queues numbered beyond the tables: not in the histograms */
	COUNTER_DISK_MAP_FULL = 2,
	/* dispatches whose tag slot another request held (a collision, or one whose completion
	 * we missed): that request's completion finds no slot, so has no dispatch time,
	 * in-flight depth or task of ours */
	COUNTER_TAG_COLLISIONS = 3,
	COUNTER_OTHER_OPS = 4,        /* zone, write-zeroes and driver ops: not read/write/discard/flush */
	COUNTER_ERRORS = 5,           /* timed completions carrying an error */
	/* completions whose device time is above their disk's threshold or whose total time is
	 * above the ceiling */
	COUNTER_OUTLIERS = 6,
	COUNTER_EVENTS = 7,           /* events written to the ring buffer */
	COUNTER_DROPPED_BUDGET = 8,   /* sampled I/Os over their disk's per-second event budget: no event */
	COUNTER_DROPPED_OUTLIERS = 9, /* outliers among the drops of both kinds, budget and ring buffer */
	COUNTER_DROPPED_RINGBUF = 10, /* sampled I/Os the full ring buffer refused: no event */
	/* flight recordings started by a cluster of outliers (the agent starts those of a
	 * shifted latency shape, through disk_config) */
	COUNTER_RECORDER_STARTS = 11,
	COUNTER_RETIRED = 12,         /* CPU copies of a disk's histograms retired: another disk took over its request queue */
	/* of which could not be retired (the table full, or this CPU's copy of that disk
	 * retired before and not yet drained): their counts are lost */
	COUNTER_RETIRED_LOST = 13,
	COUNTERS = 14,
};

#endif
