// SPDX-License-Identifier: GPL-2.0
/* Every block request, seen at dispatch and completion:
 * - per disk and op, log2 histograms of device, queue and total latency, aggregated in
 *   the kernel and read by the agent every interval (exact counts);
 * - in-flight depth at dispatch and errors;
 * - sampled events through a ring buffer: every outlier, a uniform 1/N, and a flight
 *   recorder of every I/O of a disk for a while when its outliers cluster or the agent
 *   sees its latency shape shift, and every I/O of a quiet disk. A per-disk, per-second
 *   budget bounds the volume; every drop is counted. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "iotrace.h"

/* The agent sizes the disk tables before loading (see disk_table_size in iotrace.rs). */
#define DEFAULT_DISK_TABLE 64
/* Retired CPU copies of disks' histograms awaiting the agent, which drains them every
 * interval: a disk must give up its request queue on this many CPUs in one interval
 * to lose counts. */
#define MAX_RETIRED 256
/* Disks with sampling settings (written by the agent, read on the rare sampled path). */
#define MAX_DISK_CONFIGS 1024
#define NSEC_PER_SEC 1000000000ULL
#define REQ_OP_BITS 8
#define REQ_OP_MASK ((1 << REQ_OP_BITS) - 1)
/* include/linux/blk_types.h enum req_op values, stable since 4.10. */
#define KERNEL_REQ_OP_READ 0
#define KERNEL_REQ_OP_WRITE 1
#define KERNEL_REQ_OP_FLUSH 2
#define KERNEL_REQ_OP_DISCARD 3

/* Set by the agent before loading, from its options and their defaults (`iopipe-agent run
 * --help`): the object holds no values of its own, so there is one default for each. */
const volatile u64 ceiling_ns = 0;        /* total latency above this is always an outlier */
const volatile u32 uniform_every = 0;     /* 1/N of the other I/Os are sampled */
const volatile u64 budget_per_second = 0; /* events per disk per second */
const volatile u64 recorder_ns = 0;       /* how long a flight recording lasts */
const volatile u64 cluster_outliers = 0;  /* outliers of a disk in one second that start one, at least */
const volatile u64 quiet_ios = 0;         /* a disk with fewer completions in the last second has all its I/Os recorded */

/* Never written: makes struct event part of the object's BTF, so the agent's skeleton
 * has its type (a ring buffer map names no value type). */
struct event event_layout = {};

/* Never written either: puts the enums the agent indexes its tables by in the object's
 * BTF, so the skeleton carries their values and a table that disagrees does not compile. */
struct enum_layout {
	enum bpf_counter counter;
	enum latency_kind latency;
	enum io_op op;
	enum sample_reason reason;
} enum_layout = {};

/* The interval the agent is reading; it bumps this before reading the maxima. */
u64 interval = 0;
/* Written by the agent with each disk's settings: the lowest outlier threshold of any
 * disk, and the end of the latest flight recording it started. A completion faster
 * than the one, outside the other, needs no lookup of its disk's settings. */
u64 lowest_outlier_ns = 0;
u64 any_recording_until_ns = 0;

/* The per-disk tables are arrays indexed by the request queue's number (q->id, a small
 * integer the kernel reuses lowest first): an array lookup is an address computation,
 * where the hash maps keyed by major:minor they replace cost a third of the programs'
 * time (BPF ns per I/O 442 -> 325 on a RAM disk, agent/bench/RESULTS.md). */

/* Per-disk state shared by all CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DEFAULT_DISK_TABLE);
	__type(key, u32);
	__type(value, struct disk_state);
} disks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_DISK_CONFIGS);
	__type(key, struct disk_key);
	__type(value, struct disk_config);
} disk_configs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DEFAULT_DISK_TABLE);
	__type(key, u32);
	__type(value, struct disk_hists);
} hists SEC(".maps");

/* A CPU's copy of a disk's histograms, moved here when another disk takes over its
 * request queue; the agent adds it to the disk's totals and deletes it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_RETIRED);
	__type(key, struct retired_key);
	__type(value, struct disk_hists);
} retired SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTERS);
	__type(key, u32);
	__type(value, u64);
} counters SEC(".maps");

static const struct disk_hists zero_hists;

static __always_inline void count(enum bpf_counter which)
{
	u32 key = which;
	u64 *value = bpf_map_lookup_elem(&counters, &key);
	if (value)
		*value += 1;
}

/* tp_btf programs get a typed request pointer and read through it directly (a plain
 * load the verifier guards); raw_tp programs need a probe-read helper call per field,
 * which at ten fields per I/O measured ~5x slower. `btf` is a constant in each program,
 * so each gets one way only. */
#define RQ_READ(btf, direct, ...) ((btf) ? (direct) : BPF_CORE_READ(__VA_ARGS__))

/* The one place kernel differences live. */
struct request___pre_5_17 {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline struct disk_key request_disk(struct request *rq, const bool btf)
{
	struct gendisk *disk;
	/* Linux 5.17 removed rq->rq_disk; the disk is reached through the queue since. */
	struct request___pre_5_17 *old = (void *)rq;
	if (bpf_core_field_exists(old->rq_disk))
		disk = RQ_READ(btf, old->rq_disk, old, rq_disk);
	else
		disk = RQ_READ(btf, rq->q->disk, rq, q, disk);
	struct disk_key key = {
		.major = RQ_READ(btf, disk->major, disk, major),
		.minor = RQ_READ(btf, disk->first_minor, disk, first_minor),
	};
	return key;
}

static __always_inline int request_op(struct request *rq, const bool btf)
{
	switch (RQ_READ(btf, rq->cmd_flags, rq, cmd_flags) & REQ_OP_MASK) {
	case KERNEL_REQ_OP_READ:
		return IO_READ;
	case KERNEL_REQ_OP_WRITE:
		return IO_WRITE;
	case KERNEL_REQ_OP_DISCARD:
		return IO_DISCARD;
	case KERNEL_REQ_OP_FLUSH:
		return IO_FLUSH;
	default:
		return -1;
	}
}

/* Whether the request is part of a flush sequence (its data part is dispatched with
 * RQF_FLUSH_SEQ set; the kernel clears it when the sequence ends). */
static __always_inline bool in_flush_sequence(struct request *rq, const bool btf)
{
	u32 flag;
	if (bpf_core_enum_value_exists(enum rqf_flags, __RQF_FLUSH_SEQ))
		flag = 1U << bpf_core_enum_value(enum rqf_flags, __RQF_FLUSH_SEQ);
	else
		flag = 1U << 4; /* RQF_FLUSH_SEQ while it was a #define, before enum rqf_flags */
	return RQ_READ(btf, rq->rq_flags, rq, rq_flags) & flag;
}

/* The steps of a flush sequence (block/blk-flush.c REQ_FSEQ_*): each is marked in
 * rq->flush.seq when done or not needed, so all three are when the sequence ends. */
#define FLUSH_SEQUENCE_STEPS 0x7 /* PREFLUSH | DATA | POSTFLUSH */

/* Whether this completion of a write we did not see dispatched ends a flush sequence
 * (the kernel strips the flush flags from the request as it enters one). Its data, if
 * any, completed before, timed; its flushes were requests of their own, timed as
 * flushes. Timing it from the kernel's dispatch stamp of its data would count that
 * write twice, the second time as slow as its data and flushes together. */
static __always_inline bool ends_flush_sequence(struct request *rq, unsigned int nr_bytes, const bool btf)
{
	return nr_bytes == 0 && RQ_READ(btf, rq->flush.seq, rq, flush.seq) == FLUSH_SEQUENCE_STEPS;
}

/* The driver tag is unique among the in-flight requests of a hardware queue, so
 * (queue, tag) names a request from dispatch to completion without a per-request hash
 * map (measured elsewhere as the dominant cost at high IOPS). Disks with more than
 * TAG_SLOTS tags in all can collide; a collision is counted, never miscounted. */
static __always_inline u32 slot_index(struct request *rq, const bool btf)
{
	u32 tag = RQ_READ(btf, rq->tag, rq, tag);
	u32 queue = RQ_READ(btf, rq->mq_hctx->queue_num, rq, mq_hctx, queue_num);
	u32 tags = RQ_READ(btf, rq->mq_hctx->tags->nr_tags, rq, mq_hctx, tags, nr_tags);
	return (queue * tags + tag) % TAG_SLOTS;
}

static __always_inline u32 request_queue_number(struct request *rq, const bool btf)
{
	return RQ_READ(btf, rq->q->id, rq, q, id);
}

#define CLAIMING (~0ULL)

/* The shared state of the request queue's entry, taken over by `key`'s disk if another
 * disk (or none) had it. NULL while another CPU takes it over (that I/O goes untracked
 * and is counted so at its completion), or beyond the table (counted by disk_hists). */
static __always_inline struct disk_state *disk_state(u32 queue, struct disk_key *key)
{
	struct disk_state *state = bpf_map_lookup_elem(&disks, &queue);
	if (!state)
		return NULL;
	u64 owner = (u64)key->major << 32 | key->minor;
	u64 current = state->owner;
	if (current == owner)
		return state;
	if (current == CLAIMING || !__sync_bool_compare_and_swap(&state->owner, current, CLAIMING))
		return NULL;
	/* Nothing of the previous disk may leak into this one's depth or samples. */
	for (int i = 0; i < TAG_SLOTS; i++)
		state->slots[i].request = 0;
	state->inflight = 0;
	state->recorder_until_ns = 0;
	state->second = 0;
	state->events_in_second = 0;
	state->outliers_in_second = 0;
	state->ios_in_second = 0;
	state->ios_last_second = 0;
	__sync_lock_test_and_set(&state->owner, owner);
	return state;
}

/* floor(log2(v)), v > 0, in six steps (no loop: this runs three times per I/O). */
static __always_inline u64 log2_floor(u64 v)
{
	u64 r, shift;
	r = (v > 0xFFFFFFFFULL) << 5;
	v >>= r;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline u64 log2_slot(u64 us)
{
	return us < 2 ? 0 : log2_floor(us);
}

static __always_inline void record(struct disk_hists *h, int op, int kind, u64 ns)
{
	u64 us = ns / 1000;
	u64 slot = log2_slot(us);
	if (slot >= MAX_SLOTS)
		slot = MAX_SLOTS - 1;
	if (op < 0 || op >= OPS || kind < 0 || kind >= LATENCY_KINDS)
		return;
	struct hist *hist = &h->hist[op][kind];
	hist->slots[slot] += 1;
	hist->count += 1;
	hist->sum_us += us;
	/* Per CPU: no other writer. A completion racing the agent's bump of `interval` can
	 * lose this max, never a count. */
	u64 current = interval;
	if (h->max_interval[op][kind] != current || us > h->max_us[op][kind]) {
		h->max_interval[op][kind] = current;
		h->max_us[op][kind] = us;
	}
}

/* This CPU's histograms of the request queue's entry, for `key`'s disk. A copy that
 * counted another disk retires first, so none of that disk's counts are lost. Per CPU:
 * no other program writes it (a program never nests inside itself on one CPU). */
static __always_inline struct disk_hists *disk_hists(u32 queue, struct disk_key *key)
{
	struct disk_hists *h = bpf_map_lookup_elem(&hists, &queue);
	if (!h) {
		count(COUNTER_DISK_MAP_FULL);
		return NULL;
	}
	if (h->disk.major == key->major && h->disk.minor == key->minor)
		return h;
	if (h->disk.major || h->disk.minor) {
		struct retired_key retiring = { .disk = h->disk, .cpu = bpf_get_smp_processor_id() };
		/* NOEXIST: an entry the agent has not drained yet holds counts of its own. */
		count(COUNTER_RETIRED);
		if (bpf_map_update_elem(&retired, &retiring, h, BPF_NOEXIST))
			count(COUNTER_RETIRED_LOST);
	}
	bpf_map_update_elem(&hists, &queue, &zero_hists, BPF_ANY); /* this CPU's copy only */
	h->disk = *key;
	return h;
}

static __always_inline int on_issue(struct request *rq, const bool btf)
{
	struct disk_key key = request_disk(rq, btf);
	struct disk_state *state = disk_state(request_queue_number(rq, btf), &key);
	if (!state)
		return 0;
	struct tag_slot *slot = &state->slots[slot_index(rq, btf) & (TAG_SLOTS - 1)];
	u64 request = (u64)rq;
	if (slot->request == request) {
		/* Dispatched again after a requeue the agent missed: in flight once. */
		__sync_fetch_and_sub(&state->inflight, 1);
	} else if (slot->request) {
		/* Taken by another request: a collision, or one whose completion we missed.
		 * That one leaves the in-flight count now; its completion will find no slot. */
		count(COUNTER_TAG_COLLISIONS);
		__sync_fetch_and_sub(&state->inflight, 1);
	}
	long long depth = __sync_fetch_and_add(&state->inflight, 1) + 1;
	slot->request = request;
	slot->issue_ns = bpf_ktime_get_ns();
	slot->inflight = depth > 0 ? depth : 1;
	slot->pid = bpf_get_current_pid_tgid() >> 32;
	/* The task, not its name: copying the name on every dispatch measured a third of
	 * this program's cost; it is read only for the few I/Os that become events. */
	slot->task = bpf_get_current_task();
	return 0;
}

static __always_inline int on_requeue(struct request *rq, const bool btf)
{
	u32 queue = request_queue_number(rq, btf);
	struct disk_state *state = bpf_map_lookup_elem(&disks, &queue);
	if (!state)
		return 0;
	struct tag_slot *slot = &state->slots[slot_index(rq, btf) & (TAG_SLOTS - 1)];
	if (slot->request == (u64)rq) {
		slot->request = 0;
		__sync_fetch_and_sub(&state->inflight, 1);
	}
	return 0;
}

/* Which sample, if any, this completion is; -1 for none. */
static __always_inline int sample_reason(struct disk_key *key, struct disk_state *state, int op, u64 device_ns,
					 u64 total_ns, u64 now)
{
	u64 second = now / NSEC_PER_SEC;
	if (state->second != second) {
		state->ios_last_second = state->second + 1 == second ? state->ios_in_second : 0;
		state->second = second;
		state->ios_in_second = 0;
		state->events_in_second = 0;
		state->outliers_in_second = 0;
	}
	__sync_fetch_and_add(&state->ios_in_second, 1);
	struct disk_config *config = NULL;
	if ((lowest_outlier_ns && device_ns > lowest_outlier_ns) || now < any_recording_until_ns)
		config = bpf_map_lookup_elem(&disk_configs, key);
	u64 threshold = config && op >= 0 && op < OPS ? config->outlier_ns[op] : 0;
	bool outlier = total_ns > ceiling_ns || (threshold && device_ns > threshold);
	if (outlier) {
		count(COUNTER_OUTLIERS);
		if (!config) /* over the ceiling: rare enough to look its settings up */
			config = bpf_map_lookup_elem(&disk_configs, key);
		u64 cluster = config && config->cluster_outliers ? config->cluster_outliers : cluster_outliers;
		if (__sync_fetch_and_add(&state->outliers_in_second, 1) + 1 == cluster) {
			state->recorder_until_ns = now + recorder_ns;
			count(COUNTER_RECORDER_STARTS);
		}
		return SAMPLE_OUTLIER;
	}
	if (now < state->recorder_until_ns || (config && now < config->recorder_until_ns))
		return SAMPLE_RECORDER;
	/* A quiet disk has too few I/Os for a threshold to mean much, and they cost little:
	 * a burst on a near-idle disk (S3) or a dying disk's few slow reads (S1) come whole. */
	if (state->ios_last_second < quiet_ios)
		return SAMPLE_RECORDER;
	if (uniform_every && bpf_get_prandom_u32() % uniform_every == 0)
		return SAMPLE_UNIFORM;
	return -1;
}

/* The dispatching task's name, if that task still runs (else empty): it may have exited
 * between dispatch and completion, and its memory been reused. */
static __always_inline void task_comm(struct tag_slot *issued, char comm[COMM_LEN])
{
	struct task_struct *task = (struct task_struct *)issued->task;
	__builtin_memset(comm, 0, COMM_LEN);
	if (BPF_CORE_READ(task, tgid) != issued->pid)
		return;
	bpf_probe_read_kernel_str(comm, COMM_LEN, &task->comm);
	if (BPF_CORE_READ(task, tgid) != issued->pid) /* exited while we read */
		__builtin_memset(comm, 0, COMM_LEN);
}

static __always_inline void emit(struct disk_key *key, struct disk_state *state, struct request *rq, const bool btf,
				 struct tag_slot *issued, int op, int reason, u64 issue_ns, u64 queue_ns, u64 now,
				 blk_status_t status, unsigned int nr_bytes)
{
	if (__sync_fetch_and_add(&state->events_in_second, 1) >= budget_per_second) {
		count(COUNTER_DROPPED_BUDGET);
		if (reason == SAMPLE_OUTLIER)
			count(COUNTER_DROPPED_OUTLIERS);
		return;
	}
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(COUNTER_DROPPED_RINGBUF);
		if (reason == SAMPLE_OUTLIER)
			count(COUNTER_DROPPED_OUTLIERS);
		return;
	}
	e->major = key->major;
	e->minor = key->minor;
	e->sector = RQ_READ(btf, rq->__sector, rq, __sector);
	e->issue_ns = issue_ns;
	e->complete_ns = now;
	e->queue_ns = queue_ns;
	e->bytes = nr_bytes;
	e->status = status;
	e->op = op;
	e->reason = reason;
	e->pad = 0;
	e->weight = reason == SAMPLE_UNIFORM ? uniform_every : 1;
	if (issued) {
		e->inflight = issued->inflight;
		e->pid = issued->pid;
		task_comm(issued, e->comm);
	} else {
		e->inflight = 0; /* unknown: dispatched before we attached, or a tag collision */
		e->pid = 0;
		__builtin_memset(e->comm, 0, sizeof(e->comm));
	}
	bpf_ringbuf_submit(e, 0);
	count(COUNTER_EVENTS);
}

/* A write's data part of a flush sequence, timed or not: the kernel counts its write
 * when the sequence ends, so the agent can tell which of its writes it has counted. */
static __always_inline void count_flush_sequence_data(u32 queue, struct disk_key *key, struct request *rq, int op,
						      const bool btf, struct disk_hists *h)
{
	if (op != IO_WRITE || !in_flush_sequence(rq, btf))
		return;
	if (!h)
		h = disk_hists(queue, key);
	if (h)
		h->flush_sequence_data += 1;
}

static __always_inline int on_complete(struct request *rq, blk_status_t status, unsigned int nr_bytes, const bool btf)
{
	/* blk_update_request() traces each partial completion; the request goes on until
	 * the bytes completed reach what it has left. */
	if (nr_bytes < RQ_READ(btf, rq->__data_len, rq, __data_len)) {
		count(COUNTER_PARTIAL);
		return 0;
	}
	u64 now = bpf_ktime_get_ns();
	struct disk_key key = request_disk(rq, btf);
	u32 queue = request_queue_number(rq, btf);
	/* No state while another CPU takes the queue's entry over: the I/O is still
	 * counted, from the kernel's dispatch time, but cannot be sampled. */
	struct disk_state *state = disk_state(queue, &key);
	struct tag_slot issued = {};
	bool tracked = false;
	if (state) {
		struct tag_slot *slot = &state->slots[slot_index(rq, btf) & (TAG_SLOTS - 1)];
		tracked = slot->request == (u64)rq;
		if (tracked) {
			issued = *slot;
			slot->request = 0;
			__sync_fetch_and_sub(&state->inflight, 1);
		}
	}
	int op = request_op(rq, btf);
	if (!tracked && op == IO_WRITE && ends_flush_sequence(rq, nr_bytes, btf)) {
		struct disk_hists *h = disk_hists(queue, &key);
		if (h)
			h->flush_sequence_ends += 1;
		return 0;
	}
	/* Our own dispatch time when we saw it; else the kernel's, which it stamps (from a
	 * per-plug cached clock) only when queue statistics are on, e.g. for writeback
	 * throttling. */
	u64 issue_ns = tracked ? issued.issue_ns : RQ_READ(btf, rq->io_start_time_ns, rq, io_start_time_ns);
	if (!issue_ns || issue_ns > now) {
		count(COUNTER_UNTRACKED);
		count_flush_sequence_data(queue, &key, rq, op, btf, NULL);
		return 0;
	}
	if (op < 0) {
		count(COUNTER_OTHER_OPS);
		return 0;
	}
	/* Set at allocation when the disk keeps I/O statistics or has a scheduler; 0 otherwise. */
	u64 allocated_ns = RQ_READ(btf, rq->start_time_ns, rq, start_time_ns);
	u64 queue_ns = allocated_ns && allocated_ns <= issue_ns ? issue_ns - allocated_ns : 0;
	u64 device_ns = now - issue_ns;
	struct disk_hists *h = disk_hists(queue, &key);
	if (!h)
		return 0;
	record(h, op, LATENCY_DEVICE, device_ns);
	record(h, op, LATENCY_QUEUE, queue_ns);
	record(h, op, LATENCY_TOTAL, device_ns + queue_ns);
	count_flush_sequence_data(queue, &key, rq, op, btf, h);
	if (status) {
		count(COUNTER_ERRORS);
		if (op >= 0 && op < OPS)
			h->errors[op] += 1;
	}
	if (!state)
		return 0;
	int reason = sample_reason(&key, state, op, device_ns, device_ns + queue_ns, now);
	if (reason >= 0)
		emit(&key, state, rq, btf, tracked ? &issued : NULL, op, reason, issue_ns, queue_ns, now, status, nr_bytes);
	return 0;
}

/* tp_btf where the kernel has BTF for the tracepoints; raw_tp otherwise. The agent
 * loads one set or the other. block_rq_issue and block_rq_requeue take (rq) since
 * Linux 5.11, which dropped their request_queue argument. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(btf_issue, struct request *rq)
{
	return on_issue(rq, true);
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(btf_requeue, struct request *rq)
{
	return on_requeue(rq, true);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_complete, struct request *rq, blk_status_t status, unsigned int nr_bytes)
{
	return on_complete(rq, status, nr_bytes, true);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_issue, struct request *rq)
{
	return on_issue(rq, false);
}

SEC("raw_tp/block_rq_requeue")
int BPF_PROG(raw_requeue, struct request *rq)
{
	return on_requeue(rq, false);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_complete, struct request *rq, blk_status_t status, unsigned int nr_bytes)
{
	return on_complete(rq, status, nr_bytes, false);
}

char LICENSE[] SEC("license") = "GPL";
