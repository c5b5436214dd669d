#include "os.h"

#include "region.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "at_fork.h"
#include "log.h"

#define SWEEP_PERIOD_NS 200000000ull
#define SWEEP_MIN_GAP_NS 150000000ull
#define LOCK_TIMEOUT_NS 1000000000ull /* whole seconds */
#define REAPER_STACK_BYTES (1u << 20)

static struct tessera_region* g_region;
static struct tessera_region_spill* g_spill; /* the region's spill appendix */
/* The region file, open for the process's life: its slot's liveness lock lives on this open file
 * description. g_path reopens it in a forked child, which must not share the parent's. */
static int g_fd = -1;
static char g_fd_target[4096]; /* what /proc/self/fd/<g_fd> named at open ("" = unknown) */
static char g_path[4096];
static int g_slot = -1;
static int g_slot_pid;
static uint64_t g_slot_start;
static int g_reaper_started;
static int g_reaper_running; /* the reaper thread was created (atomic) */
static pthread_mutex_t g_slot_mutex = PTHREAD_MUTEX_INITIALIZER;
static int g_lock_timed_out; /* the last lock timed out (logged once per run of timeouts) */

struct tessera_region* region_get(void) {
  return __atomic_load_n(&g_region, __ATOMIC_ACQUIRE);
}

static int init_mutex(pthread_mutex_t* mutex) {
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0) return -1;
  int rc = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  if (rc == 0) rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  if (rc == 0) rc = pthread_mutex_init(mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  return rc == 0 ? 0 : -1;
}

/* Under region_open's flock, in a valid region: when it was last opened in another boot (or by a
 * library that did not record boots), nothing in it is current. Its processes are gone, and its
 * CLOCK_MONOTONIC times would make the compute limiter wait for as long as the previous boot
 * lasted: it starts over. */
static void start_over_after_reboot(struct tessera_region* r) {
  uint64_t boot[2];
  if (os_boot_id(boot) != 0) return;
  if (r->boot_id[0] == boot[0] && r->boot_id[1] == boot[1]) return;
  int had_boot = r->boot_id[0] != 0 || r->boot_id[1] != 0;
  /* A holder of the lock at the crash left it taken by a thread that no longer exists, which the
   * kernel never reports as dead: the lock is made anew. */
  if (init_mutex(&r->lock.mutex) != 0) return;
  memset(r->slots, 0, sizeof(r->slots));
  memset((char*)r + r->spill_offset, 0, sizeof(struct tessera_region_spill));
  for (int d = 0; d < TESSERA_REGION_MAX_DEVICES; ++d) {
    r->devices[d].used_bytes = 0;
    r->devices[d].compute_tat_ns = 0;
    r->devices[d].compute_contended_ns = 0;
  }
  r->last_sweep_ns = 0;
  r->boot_id[0] = boot[0];
  r->boot_id[1] = boot[1];
  if (had_boot) {
    HOOK_LOG(HOOK_LOG_INFO,
             "the shared region was last used before the machine rebooted: its "
             "processes, charges and clocks are gone; starting over");
  }
}

/* The file /proc/self/fd/<fd> names, into `out`; -1 (and "") when it cannot be read. */
static int fd_target(int fd, char* out, size_t size) {
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, size - 1);
  out[n > 0 ? n : 0] = '\0';
  return n > 0 ? 0 : -1;
}

int region_open(const char* path, char* error, size_t error_size) {
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0) {
    fchmod(fd, 0666); /* whatever the umask: processes of other users share the region */
  } else if (errno == EEXIST) {
    fd = open(path, O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) {
    snprintf(error, error_size, "cannot open shared region %s: %s", path, strerror(errno));
    return -1;
  }
  /* flock serialises creation: one process sizes and initialises, the others wait. */
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  /* The fixed part, then the spill appendix: a region made by an older library (the fixed part
   * alone) is extended, and the appendix reads as zero, "nothing spilled". */
  const size_t size = sizeof(struct tessera_region), file_size = TESSERA_REGION_FILE_SIZE;
  off_t current = lseek(fd, 0, SEEK_END);
  if (current >= 0 && (size_t)current < file_size && ftruncate(fd, (off_t)file_size) != 0) {
    snprintf(error, error_size, "cannot size shared region %s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  struct tessera_region* region = mmap(NULL, file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (region == MAP_FAILED) {
    snprintf(error, error_size, "cannot map shared region %s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  int rc = 0;
  if (region->magic == 0) {
    if (init_mutex(&region->lock.mutex) != 0) {
      snprintf(error, error_size, "cannot initialise the lock of shared region %s", path);
      rc = -1;
    } else {
      region->version = TESSERA_REGION_VERSION;
      region->header_size = (uint32_t)offsetof(struct tessera_region, slots);
      region->total_size = size;
      region->device_count = TESSERA_REGION_MAX_DEVICES;
      region->slot_count = TESSERA_REGION_MAX_SLOTS;
      region->spill_offset = TESSERA_REGION_SPILL_OFFSET;
      __atomic_store_n(&region->magic, TESSERA_REGION_MAGIC, __ATOMIC_RELEASE);
    }
  } else if (region->magic != TESSERA_REGION_MAGIC || region->version != TESSERA_REGION_VERSION ||
             region->total_size != size ||
             (region->spill_offset != 0 && region->spill_offset != TESSERA_REGION_SPILL_OFFSET)) {
    snprintf(error, error_size,
             "shared region %s has another layout (magic %#llx version %u size %llu; this library "
             "uses version %u size %zu): remove it or give processes of different versions "
             "different regions",
             path, (unsigned long long)region->magic, region->version,
             (unsigned long long)region->total_size, TESSERA_REGION_VERSION, size);
    rc = -1;
  }
  if (rc == 0 && region->spill_offset == 0) {
    /* Made by a library before the appendix: its processes spilled nothing. */
    region->spill_offset = TESSERA_REGION_SPILL_OFFSET;
  }
  if (rc == 0) start_over_after_reboot(region);
  flock(fd, LOCK_UN);
  if (rc != 0) {
    close(fd);
    munmap(region, file_size);
    return -1;
  }
  snprintf(g_path, sizeof(g_path), "%s", path);
  fd_target(fd, g_fd_target, sizeof(g_fd_target));
  __atomic_store_n(&g_fd, fd, __ATOMIC_RELEASE);
  g_spill = (struct tessera_region_spill*)((char*)region + region->spill_offset);
  __atomic_store_n(&g_region, region, __ATOMIC_RELEASE);
  return 0;
}

/* Subtracts `bytes` from *value, stopping at 0; returns what it took. */
static uint64_t sub_saturating(uint64_t* value, uint64_t bytes) {
  uint64_t old = __atomic_load_n(value, __ATOMIC_RELAXED);
  uint64_t take;
  do {
    take = bytes < old ? bytes : old;
  } while (take != 0 && !__atomic_compare_exchange_n(value, &old, old - take, 1, __ATOMIC_ACQ_REL,
                                                     __ATOMIC_RELAXED));
  return take;
}

/* Takes the region's lock, which serialises taking and freeing slots (charges do not take it),
 * waiting at most LOCK_TIMEOUT_NS: a holder that is stopped (SIGSTOP, a debugger) must not block
 * the container's new processes for good. Returns 0, or -1 (the caller then gives up what it was
 * to do: a new process gets no slot and so no memory; a sweep waits for the next round). */
static int lock(struct tessera_region* r) {
  int rc = pthread_mutex_trylock(&r->lock.mutex); /* uncontended: no clock to read */
  if (rc == EBUSY) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += LOCK_TIMEOUT_NS / 1000000000ull;
    rc = pthread_mutex_timedlock(&r->lock.mutex, &deadline);
  }
  if (rc == EOWNERDEAD) {
    /* Nothing to repair: under the lock slots are claimed (pid written last) and freed (each
     * device's charge taken out of the slot before it leaves the total), so a holder that died
     * left at worst a total above its slots' sum, which region_slot's reconcile gives back. */
    HOOK_LOG(HOOK_LOG_INFO, "a process died holding the shared region lock; going on");
    pthread_mutex_consistent(&r->lock.mutex);
  } else if (rc == ETIMEDOUT) {
    if (!__atomic_exchange_n(&g_lock_timed_out, 1, __ATOMIC_RELAXED)) {
      hook_log(HOOK_LOG_ERROR,
               "the shared region's lock has been held for over %llu s (a stopped or traced "
               "process of this container?): allocations are refused until it is free",
               (unsigned long long)(LOCK_TIMEOUT_NS / 1000000000ull));
    }
    return -1;
  } else if (rc != 0) {
    HOOK_LOG(HOOK_LOG_ERROR, "cannot lock the shared region: %s", strerror(rc));
    return -1;
  }
  __atomic_store_n(&g_lock_timed_out, 0, __ATOMIC_RELAXED);
  return 0;
}

static void unlock(struct tessera_region* r) {
  pthread_mutex_unlock(&r->lock.mutex);
}

/* fcntl's `command` (F_OFD_SETLK, F_OFD_GETLK) with a lock of `type` on slot `s`'s liveness byte,
 * on this process's open file description. Returns fcntl's result; `fl` gets what GETLK found. */
static int liveness_lock(int command, int s, short type, struct flock* fl) {
  tessera_slot_liveness_flock(fl, s, type);
  return fcntl(__atomic_load_n(&g_fd, __ATOMIC_ACQUIRE), command, fl);
}

/* Takes (F_WRLCK; fails when another holds it) or gives back (F_UNLCK) slot `s`'s liveness lock. */
static int set_liveness_lock(int s, short type) {
  struct flock fl;
  return liveness_lock(F_OFD_SETLK, s, type, &fl);
}

/* Whether g_fd is still the region file: an application that closes every descriptor it did not
 * open (a daemon's start) drops the liveness lock with it, and may reuse the number. Told by the
 * file /proc names for the descriptor (fstat would need glibc 2.33). */
static int region_fd_intact(void) {
  int fd = __atomic_load_n(&g_fd, __ATOMIC_ACQUIRE);
  if (fd < 0) return 0;
  if (g_fd_target[0] == '\0') return 1; /* no /proc: nothing to compare */
  char now[sizeof(g_fd_target)];
  return fd_target(fd, now, sizeof(now)) == 0 && strcmp(now, g_fd_target) == 0;
}

/* Under the lock. The slot's charge leaves the slot before the total: a holder that dies in
 * between leaves the total too high (given back by the reconcile), never too low. */
static void free_slot_locked(struct tessera_region* r, int s) {
  struct tessera_region_slot* slot = &r->slots[s];
  struct tessera_region_spill* spill = g_spill;
  for (int d = 0; d < TESSERA_REGION_MAX_DEVICES; ++d) {
    /* The spilled part first: it is part of used_bytes, and must never be left above it. */
    uint64_t spilled = __atomic_exchange_n(&spill->slot_bytes[s][d], 0, __ATOMIC_ACQ_REL);
    if (spilled != 0) sub_saturating(&spill->device_bytes[d], spilled);
    uint64_t used = __atomic_exchange_n(&slot->used_bytes[d], 0, __ATOMIC_ACQ_REL);
    if (used != 0) sub_saturating(&r->devices[d].used_bytes, used);
  }
  __atomic_store_n(&slot->start_time, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->flags, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->pid, 0, __ATOMIC_RELEASE);
}

/* Whether the process of a taken slot (its pid and recorded start time) still runs. */
static int process_alive(int pid, uint64_t recorded) {
  uint64_t start = 0;
  int zombie = 0;
  return os_process_info(pid, &start, &zombie) == 0 && !zombie &&
         (start == 0 || recorded == 0 || start == recorded);
}

/* Whether the process of taken slot `s` still runs: by its liveness lock when it holds one (the
 * only test that works for a process in another PID namespace: pods sharing a DRA claim), else by
 * its PID in this namespace (a slot of an older library). A lock that cannot be tested counts as
 * held: a charge kept too long errs on the safe side. */
static int slot_alive(struct tessera_region* r, int s, int pid, uint64_t recorded) {
  if (!(__atomic_load_n(&r->slots[s].flags, __ATOMIC_ACQUIRE) & TESSERA_SLOT_LIVENESS_LOCK)) {
    return process_alive(pid, recorded);
  }
  struct flock fl;
  if (liveness_lock(F_OFD_GETLK, s, F_WRLCK, &fl) != 0) return 1;
  return fl.l_type != F_UNLCK;
}

int region_sweep(void) {
  struct tessera_region* r = region_get();
  if (r == NULL) return 0;
  __atomic_store_n(&r->last_sweep_ns, os_now_ns(), __ATOMIC_RELAXED);
  int self = g_slot;
  int freed = 0;
  for (int s = 0; s < TESSERA_REGION_MAX_SLOTS; ++s) {
    int pid = __atomic_load_n(&r->slots[s].pid, __ATOMIC_RELAXED);
    if (pid == 0 || s == self) continue;
    uint64_t recorded = __atomic_load_n(&r->slots[s].start_time, __ATOMIC_RELAXED);
    if (slot_alive(r, s, pid, recorded)) continue;
    if (lock(r) != 0) return freed;
    /* Still the same process? (the slot may have been freed and retaken meanwhile) */
    if (r->slots[s].pid == pid && r->slots[s].start_time == recorded) {
      uint64_t charged = 0;
      for (int d = 0; d < TESSERA_REGION_MAX_DEVICES; ++d) charged += r->slots[s].used_bytes[d];
      if (charged != 0) {
        HOOK_LOG(HOOK_LOG_INFO, "process %d is gone: released the %llu bytes it held", pid,
                 (unsigned long long)charged);
      }
      free_slot_locked(r, s);
      ++freed;
    }
    unlock(r);
  }
  return freed;
}

static void (*g_each_round[REGION_ROUNDS])(void);
static pthread_mutex_t g_rounds_mutex = PTHREAD_MUTEX_INITIALIZER;
static void (*g_on_slot)(void);

void region_each_round(void (*fn)(void)) {
  pthread_mutex_lock(&g_rounds_mutex);
  for (int i = 0; i < REGION_ROUNDS; ++i) {
    void (*given)(void) = __atomic_load_n(&g_each_round[i], __ATOMIC_RELAXED);
    if (given == fn) break;
    if (given == NULL) {
      __atomic_store_n(&g_each_round[i], fn, __ATOMIC_RELEASE);
      break;
    }
  }
  pthread_mutex_unlock(&g_rounds_mutex);
}

void region_on_slot(void (*fn)(void)) {
  __atomic_store_n(&g_on_slot, fn, __ATOMIC_RELEASE);
}

/* On the reaper thread: the region file opened again, and this process's liveness lock taken
 * again, when the application closed the descriptor. Until then (at most one round) other
 * processes may take this one for dead and free its charge. */
static void restore_region_fd(void) {
  if (region_fd_intact()) return;
  int fd = open(g_path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  __atomic_store_n(&g_fd, fd, __ATOMIC_RELEASE);
  int slot = __atomic_load_n(&g_slot, __ATOMIC_ACQUIRE);
  if (slot >= 0) set_liveness_lock(slot, F_WRLCK);
  HOOK_LOG(HOOK_LOG_WARN,
           "the shared region's file descriptor was closed by the application: opened again");
}

static void* reaper_main(void* arg) {
  (void)arg;
  for (;;) {
    os_sleep_ns(SWEEP_PERIOD_NS);
    restore_region_fd();
    for (int i = 0; i < REGION_ROUNDS; ++i) {
      void (*each_round)(void) = __atomic_load_n(&g_each_round[i], __ATOMIC_ACQUIRE);
      if (each_round != NULL) each_round();
    }
    struct tessera_region* r = region_get();
    uint64_t last = __atomic_load_n(&r->last_sweep_ns, __ATOMIC_RELAXED);
    uint64_t now = os_now_ns();
    if (now - last < SWEEP_MIN_GAP_NS) continue;
    if (!__atomic_compare_exchange_n(&r->last_sweep_ns, &last, now, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED)) {
      continue; /* another process's reaper took this round */
    }
    region_sweep();
  }
  return NULL;
}

static void start_reaper(void) {
  /* 1 MiB of address space, touched only as far as it is used: the compute limiter's NVML poll
   * runs on this thread, and a real libnvidia-ml needs more than the 64 KiB this once had. Fixed,
   * not the default, which follows the container's RLIMIT_STACK. */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, REAPER_STACK_BYTES);
  /* The thread must not take signals meant for the application's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  int rc = pthread_create(&thread, &attr, reaper_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    HOOK_LOG(HOOK_LOG_WARN,
             "cannot start the reaper thread (%s); dead processes are then "
             "released when an allocation does not fit",
             strerror(rc));
    return;
  }
  pthread_detach(thread);
  __atomic_store_n(&g_reaper_running, 1, __ATOMIC_RELEASE);
}

int region_reaper_running(void) {
  return __atomic_load_n(&g_reaper_running, __ATOMIC_ACQUIRE);
}

/* Under the lock, when every taken slot's process is dead (their slots are then freed): no
 * process can be charging (a process charges only once it holds a slot, and slots are taken under
 * the lock), so every device's total must be 0. What is left is a charge a process made, or a
 * release it left half done, when it was killed between the two atomic steps: given back here. */
static void reconcile_locked(struct tessera_region* r) {
  for (int s = 0; s < TESSERA_REGION_MAX_SLOTS; ++s) {
    int pid = __atomic_load_n(&r->slots[s].pid, __ATOMIC_ACQUIRE);
    if (pid != 0 && slot_alive(r, s, pid, r->slots[s].start_time)) return;
  }
  for (int s = 0; s < TESSERA_REGION_MAX_SLOTS; ++s) {
    if (r->slots[s].pid != 0) free_slot_locked(r, s);
  }
  for (int d = 0; d < TESSERA_REGION_MAX_DEVICES; ++d) {
    __atomic_store_n(&g_spill->device_bytes[d], 0, __ATOMIC_RELEASE);
    uint64_t left = __atomic_exchange_n(&r->devices[d].used_bytes, 0, __ATOMIC_ACQ_REL);
    if (left != 0) {
      HOOK_LOG(HOOK_LOG_INFO,
               "device %d had %llu bytes charged with no process left to hold them (a process "
               "killed mid-update): released",
               d, (unsigned long long)left);
    }
  }
}

static int take_slot(struct tessera_region* r, int pid, uint64_t start) {
  if (lock(r) != 0) return -1;
  for (int s = 0; s < TESSERA_REGION_MAX_SLOTS; ++s) {
    /* A slot left by an earlier process with this PID that died unseen (not one of a process with
     * the same number in another PID namespace): release it. */
    if (r->slots[s].pid == pid && !slot_alive(r, s, pid, r->slots[s].start_time)) {
      free_slot_locked(r, s);
    }
  }
  reconcile_locked(r);
  int found = -1;
  uint32_t flags = 0;
  for (int s = 0; s < TESSERA_REGION_MAX_SLOTS && found < 0; ++s) {
    if (r->slots[s].pid != 0) continue;
    /* The liveness lock is taken before the slot shows a PID, so no reader sees it taken and
     * unlocked. A free slot whose lock another holds (its process lost the slot to an older
     * library's sweep, and lives) is passed over; where the file system has no such locks the
     * slot is taken without one. */
    if (set_liveness_lock(s, F_WRLCK) == 0) {
      flags = TESSERA_SLOT_LIVENESS_LOCK;
    } else if (errno == EAGAIN || errno == EACCES) {
      continue;
    } else {
      flags = 0;
    }
    found = s;
  }
  if (found >= 0) {
    r->slots[found].start_time = start;
    __atomic_store_n(&r->slots[found].flags, flags, __ATOMIC_RELAXED);
    __atomic_store_n(&r->slots[found].pid, pid, __ATOMIC_RELEASE);
  }
  unlock(r);
  return found;
}

int region_slot(void) {
  int slot = __atomic_load_n(&g_slot, __ATOMIC_ACQUIRE);
  if (slot >= 0) return slot;
  struct tessera_region* r = region_get();
  if (r == NULL) return -1;
  pthread_mutex_lock(&g_slot_mutex);
  int taken = 0;
  if (g_slot < 0) {
    int pid = (int)getpid();
    uint64_t start = 0;
    int zombie = 0;
    os_process_info(pid, &start, &zombie);
    int s = take_slot(r, pid, start);
    if (s < 0 && region_sweep() > 0) s = take_slot(r, pid, start);
    if (s < 0) {
      HOOK_LOG(HOOK_LOG_ERROR, "the shared region has no free slot (%d processes)",
               TESSERA_REGION_MAX_SLOTS);
    } else {
      g_slot_pid = pid;
      g_slot_start = start;
      if (!g_reaper_started) {
        g_reaper_started = 1;
        start_reaper();
      }
      __atomic_store_n(&g_slot, s, __ATOMIC_RELEASE);
      taken = 1;
    }
  }
  slot = g_slot;
  pthread_mutex_unlock(&g_slot_mutex);
  void (*on_slot)(void) = __atomic_load_n(&g_on_slot, __ATOMIC_ACQUIRE);
  if (taken && on_slot != NULL) on_slot();
  return slot;
}

/* Lock-free: the total first (compare-and-swap against the limit), then this process's slot. A
 * process killed between the two leaves the total too high, never too low. */
static inline int try_charge(struct tessera_region* r, int slot, int index, uint64_t bytes,
                             uint64_t limit) {
  struct tessera_region_device* device = &r->devices[index];
  /* No limit still bounds the sum: a saturated size (cuMemAlloc(SIZE_MAX)) must not wrap it. */
  uint64_t bound = limit == 0 ? UINT64_MAX : limit;
  if (bytes > bound) return -1;
  uint64_t used = __atomic_load_n(&device->used_bytes, __ATOMIC_RELAXED);
  do {
    if (used > bound - bytes) return -1;
  } while (!__atomic_compare_exchange_n(&device->used_bytes, &used, used + bytes, 1,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
  __atomic_add_fetch(&r->slots[slot].used_bytes[index], bytes, __ATOMIC_RELAXED);
  uint64_t now = used + bytes, peak = __atomic_load_n(&device->peak_bytes, __ATOMIC_RELAXED);
  while (now > peak && !__atomic_compare_exchange_n(&device->peak_bytes, &peak, now, 1,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return 0;
}

/* region_charge's second try, once dead processes' charges are released. Out of line, so that the
 * common case inlines. */
__attribute__((noinline, cold)) static int charge_after_sweep(struct tessera_region* r, int slot,
                                                              int index, uint64_t bytes,
                                                              uint64_t limit) {
  if (region_sweep() == 0) return -1;
  return try_charge(r, slot, index, bytes, limit);
}

int region_charge(int index, uint64_t bytes, uint64_t limit) {
  struct tessera_region* r = region_get();
  int slot = region_slot();
  if (r == NULL || slot < 0) return -1;
  if (try_charge(r, slot, index, bytes, limit) == 0) return 0;
  return charge_after_sweep(r, slot, index, bytes, limit);
}

/* Whether `s` is still this process's slot: false once a sweep that thought the process dead
 * took it (what it held was returned then). */
static int slot_still_ours(struct tessera_region_slot* s) {
  return __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) == g_slot_pid &&
         __atomic_load_n(&s->start_time, __ATOMIC_RELAXED) == g_slot_start;
}

/* Lock-free, in the order that errs high: out of this process's slot (never more than it holds),
 * then out of the total. */
void region_uncharge(int index, uint64_t bytes) {
  struct tessera_region* r = region_get();
  int slot = __atomic_load_n(&g_slot, __ATOMIC_ACQUIRE);
  if (r == NULL || slot < 0 || bytes == 0) return;
  struct tessera_region_slot* s = &r->slots[slot];
  if (!slot_still_ours(s)) return;
  uint64_t give = sub_saturating(&s->used_bytes[index], bytes);
  if (give != 0) sub_saturating(&r->devices[index].used_bytes, give);
}

int region_spill_charge(int index, uint64_t bytes, uint64_t cap) {
  struct tessera_region* r = region_get();
  int slot = __atomic_load_n(&g_slot, __ATOMIC_ACQUIRE);
  if (r == NULL || slot < 0 || bytes > cap) return -1;
  uint64_t* total = &g_spill->device_bytes[index];
  uint64_t spilled = __atomic_load_n(total, __ATOMIC_RELAXED);
  do {
    if (spilled > cap - bytes) return -1;
  } while (!__atomic_compare_exchange_n(total, &spilled, spilled + bytes, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
  __atomic_add_fetch(&g_spill->slot_bytes[slot][index], bytes, __ATOMIC_RELAXED);
  return 0;
}

void region_spill_uncharge(int index, uint64_t bytes) {
  struct tessera_region* r = region_get();
  int slot = __atomic_load_n(&g_slot, __ATOMIC_ACQUIRE);
  if (r == NULL || slot < 0 || bytes == 0) return;
  struct tessera_region_slot* s = &r->slots[slot];
  if (!slot_still_ours(s)) return;
  uint64_t give = sub_saturating(&g_spill->slot_bytes[slot][index], bytes);
  if (give != 0) sub_saturating(&g_spill->device_bytes[index], give);
}

uint64_t region_spilled(int index) {
  return region_get() ? __atomic_load_n(&g_spill->device_bytes[index], __ATOMIC_RELAXED) : 0;
}

uint64_t region_used(int index) {
  struct tessera_region* r = region_get();
  return r ? __atomic_load_n(&r->devices[index].used_bytes, __ATOMIC_RELAXED) : 0;
}

void region_publish_device(int index, uint64_t limit, uint32_t cores) {
  struct tessera_region* r = region_get();
  if (r == NULL) return;
  __atomic_store_n(&r->devices[index].limit_bytes, limit, __ATOMIC_RELAXED);
  __atomic_store_n(&r->devices[index].cores_percent, cores, __ATOMIC_RELAXED);
}

static void region_reset_in_child(void) {
  /* The inherited descriptor shares the parent's open file description, and so its slot's
   * liveness lock: the child's slot needs a description of its own. */
  if (g_fd >= 0) {
    int fd = open(g_path, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && region_fd_intact()) {
      dup3(fd, g_fd, O_CLOEXEC);
      close(fd);
    } else {
      /* A number that is no longer the region's is the application's: left alone. Without a
       * description of its own (-1) the child tests no lock (every locked slot counts as alive)
       * and takes its slot without one. */
      g_fd = fd;
    }
  }
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_slot_mutex = fresh;
  g_rounds_mutex = fresh;
  g_slot = -1;
  g_reaper_started = 0; /* threads do not survive fork() */
  g_reaper_running = 0;
}
HOOK_RESET_IN_CHILD(region_reset_in_child)
