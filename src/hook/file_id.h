/* What tells one version of a file from the next: a file renamed into place has another inode, one
 * rewritten in place another size or modification time. Filled by os.h's os_file_id and
 * os_read_small_file_id; compared with file_id_equal.
 *
 * Thread-safety: plain values. */
#ifndef TESSERA_HOOK_FILE_ID_H_
#define TESSERA_HOOK_FILE_ID_H_

#include <stdint.h>

struct os_file_id {
  uint64_t dev, ino, size;
  int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
};

static inline int file_id_equal(const struct os_file_id* a, const struct os_file_id* b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec &&
         a->ctime_sec == b->ctime_sec && a->ctime_nsec == b->ctime_nsec;
}

#endif /* TESSERA_HOOK_FILE_ID_H_ */
