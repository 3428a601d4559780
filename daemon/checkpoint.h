/* The background checkpointer: folds the store's WAL back into the database
 * on a thread and connection of its own, so that the writer's commits (and
 * the tool calls waiting on them) do not pay for it.
 *
 * Why: SQLite's automatic checkpoint runs inside the COMMIT that pushes the
 * WAL past its threshold. It writes every page changed since the last one
 * back to the database and fsyncs it, which takes several milliseconds;
 * under load it came every 30 ms or so, and every call in that group and
 * in the next waited for it. That was the whole tail of the tool-call
 * latency (bench/README.md).
 *
 * A PASSIVE checkpoint never blocks the writer, but it cannot finish while
 * the writer keeps appending, and SQLite only starts the WAL over once a
 * checkpoint has caught up with it. So the writer still runs a checkpoint
 * of its own when the WAL reaches the hard limit; by then the background
 * thread has copied nearly everything, and the writer's is short
 * (store.h, ATL_STORE_WAL_HARD_PAGES).
 */
#ifndef ATL_CHECKPOINT_H
#define ATL_CHECKPOINT_H

#include <stdint.h>

typedef struct atl_checkpointer_s atl_checkpointer_t;

typedef struct {
  uint64_t runs;   /* checkpoints attempted */
  uint64_t busy;   /* attempts that found another checkpoint running */
  uint64_t errors; /* attempts that failed otherwise */
} atl_checkpointer_stats_t;

/* Opens a connection to db_path (synchronous: 1 NORMAL, 2 FULL, as the
 * writer's) and starts the thread. Returns 0 or a negative ATL_E* code.
 * *out belongs to the caller, who ends it with atl_checkpointer_stop(). */
int atl_checkpointer_start(const char *db_path, int synchronous,
                           atl_checkpointer_t **out);

/* Asks for a checkpoint; never blocks. Requests made while one runs are
 * folded into one more run after it. Safe from any thread. */
void atl_checkpointer_kick(atl_checkpointer_t *c);

/* Stops a running checkpoint and keeps new ones from starting until
 * atl_checkpointer_resume(); returns once none runs. For the writer, whose
 * own checkpoint cannot start while another one holds SQLite's checkpoint
 * lock (SQLite does not wait for that lock, busy timeout or not). */
void atl_checkpointer_pause(atl_checkpointer_t *c);
void atl_checkpointer_resume(atl_checkpointer_t *c);

/* How many checkpoints so far copied the whole WAL as it was when they
 * began: the writer, seeing this change, knows that one of its own now has
 * only the commits made since to copy. Safe from any thread. */
uint64_t atl_checkpointer_caught_up(atl_checkpointer_t *c);

void atl_checkpointer_stats(atl_checkpointer_t *c,
                            atl_checkpointer_stats_t *out);

/* Waits for a running checkpoint, stops the thread, closes the connection
 * and frees c. NULL is a no-op. */
void atl_checkpointer_stop(atl_checkpointer_t *c);

#endif
