/* Shared by biolatency.bpf.c and the agent (through the skeleton's generated types). */
#ifndef IOPIPE_BIOLATENCY_H
#define IOPIPE_BIOLATENCY_H

/* log2 slots of microseconds: slot i counts [2^i, 2^(i+1)) us, slot 0 also < 1 us;
 * the last slot also holds everything longer (2^26 us is 67 s). */
#define MAX_SLOTS 27

enum latency_kind {
	LATENCY_DEVICE = 0, /* issue -> complete (btt D2C) */
	LATENCY_QUEUE = 1,  /* insert -> issue; 0 for requests issued without insertion */
	LATENCY_TOTAL = 2,  /* insert (or issue) -> complete (btt Q2C from insertion) */
	LATENCY_KINDS = 3,
};

enum io_op {
	IO_READ = 0,
	IO_WRITE = 1,
	IO_DISCARD = 2,
	IO_FLUSH = 3,
};

struct hist_key {
	unsigned int major;
	unsigned int minor;
	unsigned char op;   /* enum io_op */
	unsigned char kind; /* enum latency_kind */
	unsigned short pad;
};

/* Cumulative since attach: the agent reports differences, so counts are exact. */
struct hist {
	unsigned long long slots[MAX_SLOTS];
	unsigned long long count;
	unsigned long long sum_us;
};

struct request_times {
	unsigned long long insert_ns;
	unsigned long long issue_ns;
};

/* Every way the BPF side can miss or drop something, counted per CPU. */
enum bpf_counter {
	COUNTER_COMPLETIONS = 0,       /* completions counted into histograms */
	COUNTER_UNTRACKED = 1,         /* completions of requests issued before we attached */
	COUNTER_PARTIAL = 2,           /* partial completions (the request goes on) */
	COUNTER_REQUEST_MAP_FULL = 3,  /* issues we could not remember: their completion is lost */
	COUNTER_HIST_MAP_FULL = 4,     /* completions with no room for their disk's histogram */
	COUNTER_OTHER_OPS = 5,         /* zone, write-zeroes and driver ops: not read/write/discard/flush */
	COUNTER_ERRORS = 6,            /* completions carrying an error */
	COUNTERS = 7,
};

#endif
