/* Following the limits file while the process runs (issue 36): the node agent replaces the file
 * (a whole new file renamed into place) to resize a running container, and every process of the
 * container that loaded the library applies the new memory.<i>, spill.<i>, cores.<i> and
 * ceiling.<i> within a second, without a call from the application.
 *
 * Where it looks: the region's reaper thread, every 200 ms in each process that holds a slot
 * (region_each_round; every process that allocated or launched under a limit has one); when a
 * process takes its slot (region_on_slot); and, at most every 200 ms, from the memory queries of
 * a process without a reaper (limits_watch_if_due). A look is one open(O_PATH) and fstat of the
 * file; the file is read only when its identity (file_id.h) changed. A version that fails to
 * parse, or changes anything but those keys (limits_change.h), is not applied: the limits stay,
 * and one error line per such version says why. Limits from the environment are never followed.
 *
 * Thread-safety: thread-safe; one look at a time (another that finds one under way returns). */
#ifndef TESSERA_HOOK_LIMITS_WATCH_H_
#define TESSERA_HOOK_LIMITS_WATCH_H_

/* In a process without a reaper thread, looks at the file when the last look is 200 ms old or
 * more (a clock reading otherwise); with one, returns (the reaper looks every round). */
void limits_watch_if_due(void);

#endif /* TESSERA_HOOK_LIMITS_WATCH_H_ */
