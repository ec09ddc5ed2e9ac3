/**
 * SQLite failures a user can fix, in words that say how (issue #17): a full disk and a database
 * another process holds locked; and (issue #36) a database file that is damaged or not a
 * database, or that cannot be written, each naming the file and what to do. Other errors are left
 * as they are.
 */
export function describeStoreFailure(error: unknown, databasePath: string): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  const errno = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'SQLITE_FULL' || errno === 'ENOSPC') {
    return `the disk holding ${databasePath} is full (${(error as Error).message}); nothing already written is lost: free some space, then continue with \`marsrl resume RUN\` (or start the command again)`;
  }
  if (code === 'SQLITE_CORRUPT' || code === 'SQLITE_NOTADB' || (typeof code === 'string' && code.startsWith('SQLITE_CORRUPT'))) {
    return `the database ${databasePath} is damaged or is not a MarsRL Studio database (SQLite: ${(error as Error).message}); it was left as it is: restore it from a backup, or move it aside and start a new one (--db NEWPATH); \`sqlite3 ${databasePath} .recover\` can often salvage its rows`;
  }
  if (code === 'SQLITE_READONLY' || (typeof code === 'string' && code.startsWith('SQLITE_READONLY')) || code === 'SQLITE_CANTOPEN' || errno === 'EROFS' || errno === 'EACCES') {
    return `the database ${databasePath} cannot be ${code === 'SQLITE_CANTOPEN' ? 'opened' : 'written'} (SQLite: ${(error as Error).message}): it, its folder or its disk is read-only for this user; make the file and its folder writable (SQLite writes ${databasePath}-wal and -shm beside it), or copy it somewhere writable and pass --db COPY`;
  }
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return `the database ${databasePath} is locked by another process (${(error as Error).message}, after waiting for it); close the other program that holds it open for writing (a sqlite3 shell, a backup tool), then try again`;
  }
  return null;
}

/** A store that could not be opened, in words naming the file and the fix (issue #36). */
export class StoreOpenError extends Error {
  override readonly name = 'StoreOpenError';
}
