// faultdisk: a FUSE filesystem holding one file, `disk.img`, whose reads, writes and
// flushes take the time a latency profile says, and fail with EIO on chosen sectors.
// Attached with `losetup --direct-io=on`, it is a real block device with a known
// latency shape: the kernel's block layer, diskstats and tracepoints see real I/O.
//
//   faultdisk MOUNTPOINT SIZE_MIB 'PROFILE'
//
// PROFILE is `key=value` words (all optional):
//   units=K            requests served at once (0: unlimited). Each request takes the
//                      earliest-free unit: done = max(now, unit_free) + service, so latency
//                      is flat up to K in flight, then grows linearly (a queue).
//   read_us= write_us= flush_us=   base service time of each op
//   retry_prob=P revolution_us=R max_retries=N
//                      each retry (probability P, up to N) adds one revolution R
//   tail_prob=P tail_min_us=A tail_max_us=B
//                      with probability P add a log-uniform delay in [A, B] (a fail-slow tail)
//   error_sectors=S-E  requests touching 512-byte sectors S..E (inclusive) fail with EIO
//   seed=N             seed of the pseudo-random draws (reproducible shapes)
// Writing a new PROFILE to MOUNTPOINT/control switches it at once; reading control
// returns the profile and counts of requests served and failed.
#define _GNU_SOURCE
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define DISK_PATH "/disk.img"
#define CONTROL_PATH "/control"
#define MAX_UNITS 1024
#define PROFILE_TEXT_MAX 1024
#define SECTOR_BYTES 512

struct profile {
	int units;
	uint64_t read_ns, write_ns, flush_ns;
	double retry_prob;
	uint64_t revolution_ns;
	int max_retries;
	double tail_prob;
	uint64_t tail_min_ns, tail_max_ns;
	int64_t error_first, error_last; /* -1: none */
	uint64_t seed;
	char text[PROFILE_TEXT_MAX];
};

static struct {
	int backing_fd;
	off_t size;
	pthread_mutex_t lock; /* guards profile, unit_free_ns, rng */
	struct profile profile;
	uint64_t unit_free_ns[MAX_UNITS];
	uint64_t rng;
	atomic_uint_fast64_t served, failed;
} disk = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: small, fast, reproducible from the seed. Called under disk.lock. */
static double uniform01(void)
{
	disk.rng ^= disk.rng >> 12;
	disk.rng ^= disk.rng << 25;
	disk.rng ^= disk.rng >> 27;
	return (double)((disk.rng * 2685821657736338717ull) >> 11) / (double)(1ull << 53);
}

static int parse_profile(const char *text, struct profile *p)
{
	struct profile out = {.error_first = -1, .error_last = -1, .seed = 1};
	char buf[PROFILE_TEXT_MAX];
	char *word, *save = NULL;

	if (strlen(text) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, text);
	snprintf(out.text, sizeof(out.text), "%s", text);
	out.text[strcspn(out.text, "\n")] = '\0';
	for (word = strtok_r(buf, " \t\n", &save); word; word = strtok_r(NULL, " \t\n", &save)) {
		char *eq = strchr(word, '=');
		if (!eq)
			return -EINVAL;
		*eq = '\0';
		const char *key = word, *val = eq + 1;
		if (!strcmp(key, "units"))
			out.units = atoi(val);
		else if (!strcmp(key, "read_us"))
			out.read_ns = strtoull(val, NULL, 10) * 1000;
		else if (!strcmp(key, "write_us"))
			out.write_ns = strtoull(val, NULL, 10) * 1000;
		else if (!strcmp(key, "flush_us"))
			out.flush_ns = strtoull(val, NULL, 10) * 1000;
		else if (!strcmp(key, "retry_prob"))
			out.retry_prob = atof(val);
		else if (!strcmp(key, "revolution_us"))
			out.revolution_ns = strtoull(val, NULL, 10) * 1000;
		else if (!strcmp(key, "max_retries"))
			out.max_retries = atoi(val);
		else if (!strcmp(key, "tail_prob"))
			out.tail_prob = atof(val);
		else if (!strcmp(key, "tail_min_us"))
			out.tail_min_ns = strtoull(val, NULL, 10) * 1000;
		else if (!strcmp(key, "tail_max_us"))
			out.tail_max_ns = strtoull(val, NULL, 10) * 1000;
		else if (!strcmp(key, "error_sectors")) {
			if (sscanf(val, "%" SCNd64 "-%" SCNd64, &out.error_first, &out.error_last) != 2 ||
			    out.error_first < 0 || out.error_last < out.error_first)
				return -EINVAL;
		} else if (!strcmp(key, "seed"))
			out.seed = strtoull(val, NULL, 10);
		else
			return -EINVAL;
	}
	if (out.units < 0 || out.units > MAX_UNITS || out.retry_prob < 0 || out.retry_prob > 1 ||
	    out.tail_prob < 0 || out.tail_prob > 1 || out.tail_max_ns < out.tail_min_ns)
		return -EINVAL;
	*p = out;
	return 0;
}

static int switch_profile(const char *text)
{
	struct profile p;
	int err = parse_profile(text, &p);
	if (err)
		return err;
	pthread_mutex_lock(&disk.lock);
	disk.profile = p;
	disk.rng = p.seed ? p.seed : 1;
	memset(disk.unit_free_ns, 0, sizeof(disk.unit_free_ns));
	pthread_mutex_unlock(&disk.lock);
	return 0;
}

/* Service time of one request under the current profile. Called under disk.lock. */
static uint64_t service_ns(uint64_t base_ns)
{
	const struct profile *p = &disk.profile;
	uint64_t t = base_ns;
	for (int k = 0; k < p->max_retries && uniform01() < p->retry_prob; k++)
		t += p->revolution_ns;
	if (p->tail_prob > 0 && uniform01() < p->tail_prob) {
		double lo = log((double)(p->tail_min_ns ? p->tail_min_ns : 1));
		double hi = log((double)(p->tail_max_ns ? p->tail_max_ns : 1));
		t += (uint64_t)exp(lo + (hi - lo) * uniform01());
	}
	return t;
}

/* Books the request on the earliest-free unit and returns when it completes. */
static uint64_t book(uint64_t base_ns)
{
	uint64_t start = now_ns(), done;
	pthread_mutex_lock(&disk.lock);
	uint64_t service = service_ns(base_ns);
	if (disk.profile.units == 0) {
		done = start + service;
	} else {
		int best = 0;
		for (int i = 1; i < disk.profile.units; i++)
			if (disk.unit_free_ns[i] < disk.unit_free_ns[best])
				best = i;
		done = (disk.unit_free_ns[best] > start ? disk.unit_free_ns[best] : start) + service;
		disk.unit_free_ns[best] = done;
	}
	pthread_mutex_unlock(&disk.lock);
	return done;
}

static void wait_until(uint64_t done_ns)
{
	struct timespec ts = {.tv_sec = done_ns / 1000000000ull, .tv_nsec = done_ns % 1000000000ull};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int touches_error_sectors(off_t offset, size_t size)
{
	pthread_mutex_lock(&disk.lock);
	int64_t first = disk.profile.error_first, last = disk.profile.error_last;
	pthread_mutex_unlock(&disk.lock);
	if (first < 0 || size == 0)
		return 0;
	int64_t lo = offset / SECTOR_BYTES, hi = (offset + (off_t)size - 1) / SECTOR_BYTES;
	return lo <= last && hi >= first;
}

/* Every data request: wait its service time, then succeed or fail as the profile says. */
static int serve(uint64_t base_ns, off_t offset, size_t size)
{
	wait_until(book(base_ns));
	if (touches_error_sectors(offset, size)) {
		atomic_fetch_add(&disk.failed, 1);
		return -EIO;
	}
	atomic_fetch_add(&disk.served, 1);
	return 0;
}

static uint64_t current_ns(uint64_t *field)
{
	pthread_mutex_lock(&disk.lock);
	uint64_t v = *field;
	pthread_mutex_unlock(&disk.lock);
	return v;
}

static int fd_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (!strcmp(path, DISK_PATH)) {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = disk.size;
	} else if (!strcmp(path, CONTROL_PATH)) {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = PROFILE_TEXT_MAX;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int fd_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, DISK_PATH + 1, NULL, 0, 0);
	fill(buf, CONTROL_PATH + 1, NULL, 0, 0);
	return 0;
}

static int fd_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, DISK_PATH) && strcmp(path, CONTROL_PATH))
		return -ENOENT;
	/* Bypass the page cache: every read reaches us, so every I/O takes its time. */
	fi->direct_io = 1;
	return 0;
}

static int control_read(char *buf, size_t size, off_t offset)
{
	char text[PROFILE_TEXT_MAX + 128];
	pthread_mutex_lock(&disk.lock);
	int n = snprintf(text, sizeof(text), "%s\nserved=%" PRIuFAST64 " failed=%" PRIuFAST64 "\n", disk.profile.text,
			 atomic_load(&disk.served), atomic_load(&disk.failed));
	pthread_mutex_unlock(&disk.lock);
	if (offset >= n)
		return 0;
	size_t len = (size_t)(n - offset) < size ? (size_t)(n - offset) : size;
	memcpy(buf, text + offset, len);
	return (int)len;
}

static int fd_read(const char *path, char *buf, size_t size, off_t offset, struct fuse_file_info *fi)
{
	(void)fi;
	if (!strcmp(path, CONTROL_PATH))
		return control_read(buf, size, offset);
	if (offset >= disk.size)
		return 0;
	if (offset + (off_t)size > disk.size)
		size = (size_t)(disk.size - offset);
	int err = serve(current_ns(&disk.profile.read_ns), offset, size);
	if (err)
		return err;
	ssize_t n = pread(disk.backing_fd, buf, size, offset);
	return n < 0 ? -errno : (int)n;
}

static int fd_write(const char *path, const char *buf, size_t size, off_t offset, struct fuse_file_info *fi)
{
	(void)fi;
	if (!strcmp(path, CONTROL_PATH)) {
		char text[PROFILE_TEXT_MAX];
		if (offset != 0 || size >= sizeof(text))
			return -EINVAL;
		memcpy(text, buf, size);
		text[size] = '\0';
		int err = switch_profile(text);
		return err ? err : (int)size;
	}
	if (offset + (off_t)size > disk.size)
		return -ENOSPC;
	int err = serve(current_ns(&disk.profile.write_ns), offset, size);
	if (err)
		return err;
	ssize_t n = pwrite(disk.backing_fd, buf, size, offset);
	return n < 0 ? -errno : (int)n;
}

static int fd_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path, (void)datasync, (void)fi;
	wait_until(book(current_ns(&disk.profile.flush_ns)));
	return 0;
}

static int fd_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)fi;
	/* `echo profile > control` truncates first; the disk itself keeps its size. */
	return !strcmp(path, CONTROL_PATH) || size == disk.size ? 0 : -EPERM;
}

static void *fd_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* The kernel's default of 12 background requests would serialise the loop device. */
	conn->max_background = 256;
	conn->congestion_threshold = 192;
	cfg->direct_io = 1;
	cfg->attr_timeout = 3600;
	return NULL;
}

static const struct fuse_operations operations = {
	.init = fd_init,
	.getattr = fd_getattr,
	.readdir = fd_readdir,
	.open = fd_open,
	.read = fd_read,
	.write = fd_write,
	.fsync = fd_fsync,
	.truncate = fd_truncate,
};

int main(int argc, char *argv[])
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s MOUNTPOINT SIZE_MIB 'PROFILE'\n", argv[0]);
		return 2;
	}
	disk.size = (off_t)strtoull(argv[2], NULL, 10) * 1024 * 1024;
	if (disk.size <= 0 || switch_profile(argv[3])) {
		fprintf(stderr, "faultdisk: bad size or profile: %s %s\n", argv[2], argv[3]);
		return 2;
	}
	/* The data lives in RAM (memfd): the backing store adds no latency of its own. */
	disk.backing_fd = memfd_create("faultdisk", 0);
	if (disk.backing_fd < 0 || ftruncate(disk.backing_fd, disk.size) < 0) {
		perror("faultdisk: memfd");
		return 1;
	}
	char *fuse_argv[] = {argv[0], "-o", "allow_other,default_permissions", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
	struct fuse *fuse = fuse_new(&args, &operations, sizeof(operations), NULL);
	if (!fuse || fuse_mount(fuse, argv[1])) {
		fprintf(stderr, "faultdisk: cannot mount on %s (is /dev/fuse there, and are we root?)\n", argv[1]);
		return 1;
	}
	fuse_set_signal_handlers(fuse_get_session(fuse));
	struct fuse_loop_config *loop = fuse_loop_cfg_create();
	/* libfuse 3.14 ignores -o max_threads with fuse_main: configure the loop directly. */
	fuse_loop_cfg_set_max_threads(loop, 256);
	fuse_loop_cfg_set_idle_threads(loop, 16);
	fprintf(stderr, "faultdisk: serving %s%s\n", argv[1], DISK_PATH);
	int rc = fuse_loop_mt(fuse, loop);
	fuse_loop_cfg_destroy(loop);
	fuse_remove_signal_handlers(fuse_get_session(fuse));
	fuse_unmount(fuse);
	fuse_destroy(fuse);
	return rc ? 1 : 0;
}
