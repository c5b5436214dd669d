#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread int tessera_in_hook __attribute__((tls_model("initial-exec"))) = 0;

uint64_t os_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t os_realtime_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000u;
}

void os_sleep_ns(uint64_t ns) {
  struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                        .tv_nsec = (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

int os_boot_id(uint64_t id[2]) {
  char text[64];
  if (os_read_small_file("/proc/sys/kernel/random/boot_id", text, sizeof(text)) != 0) return -1;
  int digits = 0;
  id[0] = id[1] = 0;
  for (const char* p = text; *p != '\0' && *p != '\n'; ++p) {
    if (*p == '-') continue;
    int v = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
    if (v < 0 || digits == 32) return -1;
    id[digits / 16] = id[digits / 16] << 4 | (uint64_t)v;
    ++digits;
  }
  return digits == 32 ? 0 : -1;
}

/* Liveness without /proc: kill(pid, 0) tells "no such process" (ESRCH) from "exists" (0) and
 * "exists, not ours" (EPERM). The start time is then unknown (0). */
static int process_exists(int pid, uint64_t* start_time, int* zombie) {
  if (kill(pid, 0) == -1 && errno == ESRCH) return -1;
  *start_time = 0;
  *zombie = 0;
  return 0;
}

int os_process_info(int pid, uint64_t* start_time, int* zombie) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  /* Not readable: no /proc, or hidepid hides other users' processes. */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return process_exists(pid, start_time, zombie);
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return process_exists(pid, start_time, zombie); /* it may just have exited */
  buf[n] = '\0';
  /* The command name (field 2) may hold spaces and parentheses: parse after the last ')'. A line
   * that does not parse never declares a process dead. */
  char* p = strrchr(buf, ')');
  if (p == NULL || p[1] != ' ') return process_exists(pid, start_time, zombie);
  p += 2;
  *zombie = (*p == 'Z' || *p == 'X');
  /* Fields after ')': state is index 0, starttime (field 22) index 19. */
  for (int field = 0; field < 19; ++field) {
    p = strchr(p, ' ');
    if (p == NULL) return process_exists(pid, start_time, zombie);
    ++p;
  }
  uint64_t value = 0;
  while (*p >= '0' && *p <= '9') value = value * 10 + (uint64_t)(*p++ - '0');
  *start_time = value;
  return 0;
}

void os_write_stderr(const char* text, size_t len) {
  while (len > 0) {
    ssize_t n = write(2, text, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    text += n;
    len -= (size_t)n;
  }
}

/* fstat by its system call: glibc's fstat and stat are GLIBC_2.33 symbols (__fxstat before).
 * Fills `id` when not NULL. */
static int fd_stat(int fd, unsigned int* type, struct os_file_id* id) {
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0) return -1;
  *type = st.st_mode & S_IFMT;
  if (id != NULL) {
    *id = (struct os_file_id){.dev = (uint64_t)st.st_dev,
                              .ino = (uint64_t)st.st_ino,
                              .size = (uint64_t)st.st_size,
                              .mtime_sec = (int64_t)st.st_mtim.tv_sec,
                              .mtime_nsec = (int64_t)st.st_mtim.tv_nsec,
                              .ctime_sec = (int64_t)st.st_ctim.tv_sec,
                              .ctime_nsec = (int64_t)st.st_ctim.tv_nsec};
  }
  return 0;
}

static int fd_type(int fd, unsigned int* type) {
  return fd_stat(fd, type, NULL);
}

int os_file_type(const char* path, unsigned int* type) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fd_type(fd, type);
  int saved = errno;
  close(fd);
  errno = saved;
  return rc;
}

int os_file_id(const char* path, struct os_file_id* id) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return -1;
  unsigned int type = 0;
  int rc = fd_stat(fd, &type, id);
  int saved = errno;
  close(fd);
  errno = saved;
  return rc;
}

int os_read_small_file(const char* path, char* buffer, size_t size) {
  return os_read_small_file_id(path, buffer, size, NULL);
}

int os_read_small_file_id(const char* path, char* buffer, size_t size, struct os_file_id* id) {
  /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below). */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  unsigned int type = 0;
  if (fd_stat(fd, &type, id) != 0 || type != S_IFREG) {
    close(fd);
    errno = EINVAL;
    return -1;
  }
  size_t used = 0;
  for (;;) {
    if (used == size - 1) {
      close(fd);
      errno = EFBIG;
      return -1;
    }
    ssize_t n = read(fd, buffer + used, size - 1 - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    if (n == 0) break;
    used += (size_t)n;
  }
  close(fd);
  buffer[used] = '\0';
  return 0;
}
