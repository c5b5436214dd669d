/* What the child of a fork() must redo before it uses the library: each module that keeps
 * process-local state (locks another thread may have held at the fork, tables of the parent's
 * handles) registers its own reset when the library is loaded, and state.c arms them all once the
 * library is active, so that an inactive process's fork() runs nothing of ours.
 *
 *   static void things_reset_in_child(void) { ... fresh lock, empty table ... }
 *   HOOK_RESET_IN_CHILD(things_reset_in_child)
 *
 * The resets run in the child in the order the loader registered them, which is not defined: none
 * may depend on another module's. */
#ifndef TESSERA_HOOK_AT_FORK_H_
#define TESSERA_HOOK_AT_FORK_H_

/* Registers `reset` from a constructor (run by the loader, before any thread of ours exists). */
#define HOOK_RESET_IN_CHILD(reset)                                  \
  __attribute__((constructor)) static void reset##_register(void) { \
    hook_at_fork_register(reset);                                   \
  }

void hook_at_fork_register(void (*reset)(void));

/* Installs the one pthread_atfork child handler that runs every registered reset. Call it once. */
void hook_at_fork_arm(void);

#endif  // TESSERA_HOOK_AT_FORK_H_
