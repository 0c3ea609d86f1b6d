// SPDX-License-Identifier: GPL-2.0
/* Per disk and op, log2 histograms of device, queue and total latency of every block
 * request, aggregated in the kernel; the agent reads them every interval. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "biolatency.h"

#define MAX_REQUESTS 65536
#define MAX_HISTS 8192
#define REQ_OP_BITS 8
#define REQ_OP_MASK ((1 << REQ_OP_BITS) - 1)
/* include/linux/blk_types.h enum req_op values, stable since 4.10. */
#define KERNEL_REQ_OP_READ 0
#define KERNEL_REQ_OP_WRITE 1
#define KERNEL_REQ_OP_FLUSH 2
#define KERNEL_REQ_OP_DISCARD 3

/* When each in-flight request was inserted and issued. The request carries no reliable
 * issue time of its own (io_start_time_ns is set after block_rq_issue fires, and only
 * with queue stats on), so it is kept here, keyed by the request's address. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_REQUESTS);
	__type(key, u64); /* struct request * */
	__type(value, struct request_times);
} requests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_HISTS);
	__type(key, struct hist_key);
	__type(value, struct hist);
} hists SEC(".maps");

/* Largest latency since the agent last read it: the agent deletes an entry after reading
 * it, so a max is per interval (a race can only lose a max, never a count). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_HISTS);
	__type(key, struct hist_key);
	__type(value, u64);
} hist_max SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTERS);
	__type(key, u32);
	__type(value, u64);
} counters SEC(".maps");

static __always_inline void count(enum bpf_counter which)
{
	u32 key = which;
	u64 *value = bpf_map_lookup_elem(&counters, &key);
	if (value)
		*value += 1;
}

/* The one place kernel differences live. */
struct request___pre_5_17 {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *request_disk(struct request *rq)
{
	/* Linux 5.17 removed rq->rq_disk; the disk is reached through the queue since. */
	struct request___pre_5_17 *old = (void *)rq;
	if (bpf_core_field_exists(old->rq_disk))
		return BPF_CORE_READ(old, rq_disk);
	return BPF_CORE_READ(rq, q, disk);
}

static __always_inline int request_op(struct request *rq)
{
	switch (BPF_CORE_READ(rq, cmd_flags) & REQ_OP_MASK) {
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

static __always_inline u64 log2_slot(u64 us)
{
	u64 slot = 0;
	/* Bounded loop: the verifier sees at most MAX_SLOTS iterations. */
	for (int i = 0; i < MAX_SLOTS - 1; i++) {
		if (us < 2)
			break;
		us >>= 1;
		slot++;
	}
	return slot;
}

static __always_inline void record(struct hist_key *key, u64 ns)
{
	static const struct hist zero;
	struct hist *h = bpf_map_lookup_elem(&hists, key);
	if (!h) {
		if (bpf_map_update_elem(&hists, key, &zero, BPF_NOEXIST) && bpf_map_update_elem(&hists, key, &zero, BPF_ANY)) {
			count(COUNTER_HIST_MAP_FULL);
			return;
		}
		h = bpf_map_lookup_elem(&hists, key);
		if (!h)
			return;
	}
	u64 us = ns / 1000;
	u64 slot = log2_slot(us);
	if (slot >= MAX_SLOTS)
		slot = MAX_SLOTS - 1;
	h->slots[slot] += 1;
	h->count += 1;
	h->sum_us += us;
	u64 *max = bpf_map_lookup_elem(&hist_max, key);
	if (!max)
		bpf_map_update_elem(&hist_max, key, &us, BPF_NOEXIST);
	else if (us > *max)
		*max = us;
}

static __always_inline int on_insert(struct request *rq)
{
	u64 id = (u64)rq;
	struct request_times times = {.insert_ns = bpf_ktime_get_ns()};
	if (bpf_map_update_elem(&requests, &id, &times, BPF_ANY))
		count(COUNTER_REQUEST_MAP_FULL);
	return 0;
}

static __always_inline int on_issue(struct request *rq)
{
	u64 id = (u64)rq;
	u64 now = bpf_ktime_get_ns();
	struct request_times *known = bpf_map_lookup_elem(&requests, &id);
	if (known) {
		known->issue_ns = now;
		return 0;
	}
	struct request_times times = {.issue_ns = now};
	if (bpf_map_update_elem(&requests, &id, &times, BPF_ANY))
		count(COUNTER_REQUEST_MAP_FULL);
	return 0;
}

static __always_inline int on_complete(struct request *rq, int error, unsigned int nr_bytes)
{
	u64 id = (u64)rq;
	/* blk_update_request() traces each partial completion; the request goes on until
	 * the bytes completed reach what it has left. */
	if (nr_bytes < BPF_CORE_READ(rq, __data_len)) {
		count(COUNTER_PARTIAL);
		return 0;
	}
	struct request_times *times = bpf_map_lookup_elem(&requests, &id);
	if (!times || !times->issue_ns) {
		count(COUNTER_UNTRACKED);
		if (times)
			bpf_map_delete_elem(&requests, &id);
		return 0;
	}
	u64 now = bpf_ktime_get_ns();
	u64 issue_ns = times->issue_ns, insert_ns = times->insert_ns;
	bpf_map_delete_elem(&requests, &id);

	int op = request_op(rq);
	if (op < 0) {
		count(COUNTER_OTHER_OPS);
		return 0;
	}
	struct gendisk *disk = request_disk(rq);
	struct hist_key key = {
		.major = BPF_CORE_READ(disk, major),
		.minor = BPF_CORE_READ(disk, first_minor),
		.op = op,
	};
	u64 queue_ns = insert_ns && insert_ns <= issue_ns ? issue_ns - insert_ns : 0;
	key.kind = LATENCY_DEVICE;
	record(&key, now - issue_ns);
	key.kind = LATENCY_QUEUE;
	record(&key, queue_ns);
	key.kind = LATENCY_TOTAL;
	record(&key, now - issue_ns + queue_ns);
	count(COUNTER_COMPLETIONS);
	if (error)
		count(COUNTER_ERRORS);
	return 0;
}

/* tp_btf where the kernel has BTF for the tracepoints; raw_tp otherwise. The agent
 * loads one set or the other. Arguments are (rq) since Linux 5.11, which dropped the
 * request_queue argument of block_rq_insert and block_rq_issue. */
SEC("tp_btf/block_rq_insert")
int BPF_PROG(btf_insert, struct request *rq)
{
	return on_insert(rq);
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(btf_issue, struct request *rq)
{
	return on_issue(rq);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, error, nr_bytes);
}

SEC("raw_tp/block_rq_insert")
int BPF_PROG(raw_insert, struct request *rq)
{
	return on_insert(rq);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_issue, struct request *rq)
{
	return on_issue(rq);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, error, nr_bytes);
}

char LICENSE[] SEC("license") = "GPL";
