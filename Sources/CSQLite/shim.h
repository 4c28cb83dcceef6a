#include <sqlite3.h>

/// Whether closing the last connection checkpoints the WAL into the database file (and deletes
/// the WAL), as by default. sqlite3_db_config is variadic, which Swift cannot call.
static inline int csqlite_set_checkpoint_on_close(sqlite3 *db, int enabled) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled ? 0 : 1, (int *)0);
}
